"""``cntk.io`` under its own name: ``from cntkio import io`` or ``import cntkio.io as io``; ``io.transforms`` is
``cntkio.transforms`` (cntk.io.transforms), importable as ``import cntkio.io.transforms`` too."""

import sys as _sys

from cntkio import *  # noqa: F401,F403
from cntkio import __all__  # noqa: F401
from cntkio import transforms  # noqa: F401
from cntkio._ctf_text import _is_tensor  # noqa: F401 -- cntk.io's tests import it from cntk.io

# `import cntk.io.transforms as xforms` is how CNTK's examples import the transforms: this module is no package,
# so the submodule is registered under that name (the import system looks there first).
_sys.modules[__name__ + ".transforms"] = transforms

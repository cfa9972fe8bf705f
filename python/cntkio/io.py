"""``cntk.io`` under its own name: ``from cntkio import io`` or ``import cntkio.io as io``."""

from cntkio import *  # noqa: F401,F403
from cntkio import __all__  # noqa: F401

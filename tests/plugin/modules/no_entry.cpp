// A shared library that is not a cntkio plugin: it defines neither entry point of cntkio/plugin.hpp.
extern "C" __attribute__((visibility("default"))) int cntkio_test_not_a_plugin() {
  return 42;
}

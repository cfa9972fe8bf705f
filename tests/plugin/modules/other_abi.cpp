// A plugin built for another plugin ABI version: the loader must refuse it before calling its registration,
// which would register the deserializer type "OtherAbiMustNotRegister".
#include <cntkio/plugin.hpp>
#include <memory>

extern "C" __attribute__((visibility("default"))) int cntkio_plugin_abi_version() {
  return CNTKIO_PLUGIN_ABI_VERSION + 1;
}

extern "C" __attribute__((visibility("default"))) void cntkio_plugin_register(
    cntkio::PluginRegistrar& registrar) {
  cntkio::DeserializerType type;
  type.name = "OtherAbiMustNotRegister";
  type.create = [](const cntkio::DeserializerSpec&, const cntkio::DeserializerContext&) {
    return std::shared_ptr<cntkio::Deserializer>();
  };
  registrar.add_deserializer(type);
}

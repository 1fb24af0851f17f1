"""How a callback reaches Inductor, for each shape of torch's API.

Chosen by what the running torch has, in this order:
1. `DeviceInterface.get_cpp_device_options(aot_mode, compile_only)` (an
   optional method that get_cpp_torch_device_options queries): attached to
   the device's registered interface, or to one registered for a device
   that has none;
2. `cpp_builder.register_cpp_device_options(device, callback)`;
3. else `get_cpp_torch_device_options` is wrapped: kbuild's devices go to
   their callback, every other device to the hook as it was.

Whatever the shape, the hook is guarded: torch_npu replaces
`get_cpp_torch_device_options` with its own function (on import, and again
when its backend loader runs, in an order nobody controls), which would
bypass 1 and 2 and drop 3. A hook someone else installed, before kbuild or
after it, is wrapped the same way, so kbuild's devices keep kbuild's answer
and every other device gets the patched hook. A device interface registered
again for a kbuild device (torch_npu registers its own) gets the method
attached again.
"""

import types

HOOK = "get_cpp_torch_device_options"
INTERFACE_METHOD = "get_cpp_device_options"
_TABLE_ATTR = "_kbuild_registered"  # on cpp_builder: device -> callback
_WRAPPER_ATTR = "_kbuild_callbacks"  # on a wrapped hook: the same table
_MARK = "_kbuild_owned"

INTERFACE, REGISTRY, WRAPPER = "device_interface", "registry", "wrapper"


def shape_of(cpp_builder, device_interface):
    """Which API this torch offers, best first."""
    base = getattr(device_interface, "DeviceInterface", None)
    if base is not None and hasattr(base, INTERFACE_METHOD):
        return INTERFACE
    if hasattr(cpp_builder, "register_cpp_device_options"):
        return REGISTRY
    return WRAPPER


def callback_table(cpp_builder):
    table = cpp_builder.__dict__.get(_TABLE_ATTR)
    if table is None:
        table = {}
        setattr(cpp_builder, _TABLE_ATTR, table)
    return table


def install(device, callback, cpp_builder, device_interface):
    shape = shape_of(cpp_builder, device_interface)
    if shape == INTERFACE:
        _guard_interface_registration(device_interface, callback_table(cpp_builder))
        _attach(device_interface, device, callback)
    elif shape == REGISTRY:
        cpp_builder.register_cpp_device_options(device, callback)
    _guard_hook(cpp_builder, wrap_now=shape == WRAPPER)
    return shape


def uninstall(device, cpp_builder, device_interface):
    callback_table(cpp_builder).pop(device, None)
    if shape_of(cpp_builder, device_interface) == INTERFACE:
        interface = _interface_for(device_interface, device)
        method = interface.__dict__.get(INTERFACE_METHOD) if interface is not None else None
        if getattr(getattr(method, "__func__", None), _MARK, False):  # kbuild's staticmethod
            delattr(interface, INTERFACE_METHOD)


def _wrap(hook, table):
    """`hook` with kbuild's devices answered by their callbacks."""
    if getattr(hook, _WRAPPER_ATTR, None) is table:
        return hook

    def get_cpp_torch_device_options(device_type, aot_mode=False, compile_only=False):
        callback = table.get(device_type)
        if callback is None:
            return hook(device_type, aot_mode, compile_only)
        return callback(device_type, aot_mode, compile_only)

    setattr(get_cpp_torch_device_options, _WRAPPER_ATTR, table)
    get_cpp_torch_device_options.__wrapped__ = hook
    return get_cpp_torch_device_options


def _patched_by_someone(hook, module):
    """A hook that is not the module's own function nor kbuild's wrapper."""
    if getattr(hook, _WRAPPER_ATTR, None) is not None:
        return False
    return getattr(hook, "__module__", module.__name__) != module.__name__


def _guarded_setattr(self, name, value):
    if name == HOOK and callable(value):
        table = self.__dict__.get(_TABLE_ATTR)
        if table:
            value = _wrap(value, table)
    types.ModuleType.__setattr__(self, name, value)


def _guard_hook(cpp_builder, wrap_now):
    """From now on an assignment to the hook is wrapped; the current hook is
    wrapped now when it is the fallback shape or someone patched it."""
    cls = type(cpp_builder)
    if getattr(cls, _MARK, False) is False:
        try:
            cpp_builder.__class__ = type("KbuildGuarded" + cls.__name__, (cls,),
                                         {"__setattr__": _guarded_setattr, _MARK: True})
        except TypeError:
            pass  # not a plain module: only the wrapping below
    hook = cpp_builder.__dict__.get(HOOK)
    if hook is not None and (wrap_now or _patched_by_someone(hook, cpp_builder)):
        types.ModuleType.__setattr__(cpp_builder, HOOK, _wrap(hook, callback_table(cpp_builder)))


def _device_name(device):
    return device if isinstance(device, str) else getattr(device, "type", str(device))


def _interface_for(device_interface, device):
    try:
        return device_interface.get_interface_for_device(device)
    except (NotImplementedError, KeyError, RuntimeError):
        return None


def _attach(device_interface, device, callback):
    interface = _interface_for(device_interface, device)
    if interface is None:
        interface = type(f"Kbuild{device.capitalize()}Interface",
                         (device_interface.DeviceInterface,), {})
        device_interface.register_interface_for_device(device, interface)

    def get_cpp_device_options(aot_mode=False, compile_only=False):
        return callback(device, aot_mode, compile_only)

    setattr(get_cpp_device_options, _MARK, True)
    setattr(interface, INTERFACE_METHOD, staticmethod(get_cpp_device_options))


def _guard_interface_registration(device_interface, table):
    """An interface registered later for a kbuild device gets the method too."""
    register = device_interface.register_interface_for_device
    if getattr(register, _MARK, False):
        return

    def register_interface_for_device(device, interface, *args, **kwargs):
        result = register(device, interface, *args, **kwargs)
        callback = table.get(_device_name(device))
        if callback is not None:
            _attach(device_interface, _device_name(device), callback)
        return result

    setattr(register_interface_for_device, _MARK, True)
    device_interface.register_interface_for_device = register_interface_for_device

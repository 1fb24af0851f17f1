"""How a callback reaches Inductor, for each shape of torch's API.

Chosen by what the running torch has, in this order:
1. `DeviceInterface.get_cpp_device_options(aot_mode, compile_only)` (an
   optional method that get_cpp_torch_device_options queries): attached to
   the device's registered interface, or to one registered for a device
   that has none;
2. `cpp_builder.register_cpp_device_options(device, callback)`; torch has
   no way to unregister, so unregister() puts back, in the module's dict
   that took the callback, the entry it replaced (none: the device's key
   is removed);
3. else `get_cpp_torch_device_options` is wrapped: kbuild's devices go to
   their callback, every other device to the hook as it was.

Whatever the shape, the hook is guarded: torch_npu replaces
`get_cpp_torch_device_options` with its own function (on import, and again
when its backend loader runs, in an order nobody controls), which would
bypass 1 and 2 and drop 3. A hook someone else installed, before kbuild or
after it, is wrapped the same way, so kbuild's devices keep kbuild's answer
and every other device gets the patched hook; a patch is a hook from
another module or one with `__wrapped__` (functools.wraps copies torch's
`__module__`). A device interface registered
again for a kbuild device (torch_npu registers its own) gets the method
attached again.
"""

import types

HOOK = "get_cpp_torch_device_options"
INTERFACE_METHOD = "get_cpp_device_options"
_TABLE_ATTR = "_kbuild_registered"  # on cpp_builder: device -> callback
_WRAPPER_ATTR = "_kbuild_callbacks"  # on a wrapped hook: the same table
_REGISTRY_ATTR = "_kbuild_registry_before"  # on cpp_builder: device -> (registry, entry before)
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
        _register(cpp_builder, device, callback)
    _guard_hook(cpp_builder, wrap_now=shape == WRAPPER)
    return shape


def uninstall(device, cpp_builder, device_interface):
    """Takes kbuild's answer for `device` away; returns its callback (None if none)."""
    callback = callback_table(cpp_builder).pop(device, None)
    shape = shape_of(cpp_builder, device_interface)
    if shape == INTERFACE:
        interface = _interface_for(device_interface, device)
        method = interface.__dict__.get(INTERFACE_METHOD) if interface is not None else None
        if getattr(getattr(method, "__func__", None), _MARK, False):  # kbuild's staticmethod
            delattr(interface, INTERFACE_METHOD)
    elif shape == REGISTRY and callback is not None:
        _unregister(cpp_builder, device, callback)
    return callback


def _register(cpp_builder, device, callback):
    """register_cpp_device_options, remembering which dict of the module took
    the callback and what it held before: torch offers no way to unregister."""
    def dicts():  # torch's, not kbuild's own tables
        return [value for name, value in vars(cpp_builder).items()
                if isinstance(value, dict) and name not in (_TABLE_ATTR, _REGISTRY_ATTR)]

    before = {id(registry): registry.get(device) for registry in dicts()}
    cpp_builder.register_cpp_device_options(device, callback)
    remembered = cpp_builder.__dict__.setdefault(_REGISTRY_ATTR, {})
    for registry in dicts():
        if registry.get(device) is callback and device not in remembered:  # kbuild's first
            remembered[device] = (registry, before.get(id(registry)))


def _unregister(cpp_builder, device, callback):
    """The registry's entry for `device` as it was before kbuild, unless
    someone registered after kbuild."""
    registry, entry = cpp_builder.__dict__.get(_REGISTRY_ATTR, {}).pop(device, (None, None))
    if registry is None or registry.get(device) is not callback:
        return
    if entry is None:
        del registry[device]
    else:
        registry[device] = entry


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
    """A hook that is not the module's own function nor kbuild's wrapper.
    functools.wraps copies torch's __module__ onto a patch, not its lack of
    __wrapped__ (a torch hook that is itself decorated is wrapped: harmless)."""
    if getattr(hook, _WRAPPER_ATTR, None) is not None:
        return False
    if hasattr(hook, "__wrapped__"):
        return True
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

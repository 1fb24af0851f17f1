"""How a callback reaches Inductor, for each shape of torch's API.

Chosen by what the running torch has, in this order:
1. `DeviceInterface.get_cpp_device_options(aot_mode, compile_only)` (torch
   2.15, PR 190614): get_cpp_torch_device_options asks the interface
   registered for the device, and a 7-tuple it returns replaces the built-in
   branches; NotImplementedError (no interface, or the base class's method)
   falls through to them. kbuild adds the method, static and without a device
   type, to the device's own registered class (torch_npu's NpuInterface,
   registered for npu and npu:0..31), never a class of its own; what the class
   held before is given back at unregister(). A device with no interface yet
   is answered through the wrapped hook (3) until its interface is
   registered, which then gets the method too;
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
`__module__`). A device interface registered again for a kbuild device
(torch_npu registers its own, eagerly or once Dynamo is imported) gets the
method attached again.
"""

import types

HOOK = "get_cpp_torch_device_options"
INTERFACE_METHOD = "get_cpp_device_options"
_TABLE_ATTR = "_kbuild_registered"  # on cpp_builder: device -> callback
_WRAPPER_ATTR = "_kbuild_callbacks"  # on a wrapped hook: the same table
_REGISTRY_ATTR = "_kbuild_registry_before"  # on cpp_builder: device -> (registry, entry before)
_ATTACHED_ATTR = "_kbuild_attached"  # on cpp_builder: device -> [(class, entry before)]
_MARK = "_kbuild_owned"
_ABSENT = object()  # a class that had no method of its own

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
    attached = False
    if shape == INTERFACE:
        _guard_interface_registration(device_interface, cpp_builder)
        attached = _attach_registered(device_interface, device, callback, cpp_builder)
    elif shape == REGISTRY:
        _register(cpp_builder, device, callback)
    # A device without its interface yet is answered by the wrapped hook.
    _guard_hook(cpp_builder, wrap_now=shape == WRAPPER or (shape == INTERFACE and not attached))
    return shape


def uninstall(device, cpp_builder, device_interface):
    """Takes kbuild's answer for `device` away; returns its callback (None if none)."""
    callback = callback_table(cpp_builder).pop(device, None)
    shape = shape_of(cpp_builder, device_interface)
    if shape == INTERFACE:
        for interface, before in cpp_builder.__dict__.get(_ATTACHED_ATTR, {}).pop(device, []):
            _detach(interface, before)
        if not callback_table(cpp_builder):
            _unguard_interface_registration(device_interface)
    elif shape == REGISTRY and callback is not None:
        _unregister(cpp_builder, device, callback)
    return callback


def _register(cpp_builder, device, callback):
    """register_cpp_device_options, remembering which dict of the module took
    the callback and what it held before: torch offers no way to unregister."""
    def dicts():  # torch's, not kbuild's own tables
        return [value for name, value in vars(cpp_builder).items()
                if isinstance(value, dict) and name not in (_TABLE_ATTR, _REGISTRY_ATTR, _ATTACHED_ATTR)]

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


def _is_kbuilds(method):
    return getattr(getattr(method, "__func__", method), _MARK, False)


def _attach(interface, device, callback, cpp_builder):
    """`interface` (a registered class) answers `device` with kbuild's
    callback: a static method without a device type, as torch calls it; what
    the class itself held before is remembered for unregister()."""
    attached = cpp_builder.__dict__.setdefault(_ATTACHED_ATTR, {}).setdefault(device, [])
    if not any(klass is interface for klass, _ in attached):
        before = interface.__dict__.get(INTERFACE_METHOD, _ABSENT)
        if _is_kbuilds(before):  # attached for another device: that one's entry before
            before = next((b for entries in cpp_builder.__dict__[_ATTACHED_ATTR].values()
                           for klass, b in entries if klass is interface), _ABSENT)
        attached.append((interface, before))

    def get_cpp_device_options(aot_mode=False, compile_only=False):
        return callback(device, aot_mode, compile_only)

    setattr(get_cpp_device_options, _MARK, True)
    setattr(interface, INTERFACE_METHOD, staticmethod(get_cpp_device_options))


def _detach(interface, before):
    """The class's entry as it was before kbuild, unless someone set another since."""
    if not _is_kbuilds(interface.__dict__.get(INTERFACE_METHOD)):
        return
    if before is _ABSENT:
        delattr(interface, INTERFACE_METHOD)
    else:
        setattr(interface, INTERFACE_METHOD, before)


def _attach_registered(device_interface, device, callback, cpp_builder):
    """Attaches to the class registered for `device`; False when there is none."""
    interface = _interface_for(device_interface, device)
    if interface is None or interface is device_interface.DeviceInterface:
        return False
    _attach(interface, device, callback, cpp_builder)
    return True


def _guard_interface_registration(device_interface, cpp_builder):
    """An interface registered later for a kbuild device (`npu`, or `npu:3`)
    gets the method too."""
    register = device_interface.register_interface_for_device
    if getattr(register, _MARK, False):
        return

    def register_interface_for_device(device, interface, *args, **kwargs):
        result = register(device, interface, *args, **kwargs)
        name = _device_name(device).partition(":")[0]
        callback = callback_table(cpp_builder).get(name)
        if callback is not None and isinstance(interface, type):
            _attach(interface, name, callback, cpp_builder)
        return result

    setattr(register_interface_for_device, _MARK, True)
    register_interface_for_device.__wrapped__ = register
    device_interface.register_interface_for_device = register_interface_for_device


def _unguard_interface_registration(device_interface):
    register = device_interface.register_interface_for_device
    if getattr(register, _MARK, False):
        device_interface.register_interface_for_device = register.__wrapped__


#include <torch/csrc/inductor/cpp_wrapper/cpu.h>
extern "C"  void  cpp_fused__softmax_relu_0(const float* in_ptr0,
                       float* out_ptr0,
                       float* out_ptr1,
                       float* out_ptr2);
CACHE_TORCH_DTYPE(float32);
CACHE_TORCH_DEVICE(cpu);

void inductor_entry_impl(
    AtenTensorHandle*
        input_handles, // array of input AtenTensorHandle; handles
                        // are stolen; the array itself is borrowed
    AtenTensorHandle*
        output_handles  // array for writing output AtenTensorHandle; handles
                        // will be stolen by the caller; the array itself is
                        // borrowed)
) {
    py::gil_scoped_release_simple release;
    auto inputs = steal_from_raw_handles_to_raii_handles(input_handles, 3);
    auto arg0_1 = std::move(inputs[0]);
    auto arg1_1 = std::move(inputs[1]);
    auto arg2_1 = std::move(inputs[2]);
    assert_size_stride(arg1_1, {32L, }, {1L, }, "input");
    assert_size_stride(arg2_1, {64L, 129L}, {129L, 1L}, "input");
    assert_size_stride(arg0_1, {32L, 129L}, {129L, 1L}, "input");
    static constexpr int64_t int_array_0[] = {64L, 32L};
    static constexpr int64_t int_array_1[] = {32L, 1L};
    AtenTensorHandle buf0_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_0, int_array_1, cached_torch_dtype_float32, cached_torch_device_type_cpu,  0, &buf0_handle));
    RAIIAtenTensorHandle buf0(buf0_handle);
    // Topologically Sorted Source Nodes: [linear], Original ATen: [aten.t, aten.addmm]
    static constexpr int64_t int_array_2[] = {129L, 32L};
    static constexpr int64_t int_array_3[] = {1L, 129L};
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_addmm_out(buf0, arg1_1, arg2_1, wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(arg0_1, 2, int_array_2, int_array_3, 0L)), 1L, 1L));
    arg0_1.reset();
    arg1_1.reset();
    arg2_1.reset();
    static constexpr int64_t int_array_4[] = {64L, 1L};
    static constexpr int64_t int_array_5[] = {1L, 64L};
    AtenTensorHandle buf1_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_4, int_array_5, cached_torch_dtype_float32, cached_torch_device_type_cpu,  0, &buf1_handle));
    RAIIAtenTensorHandle buf1(buf1_handle);
    AtenTensorHandle buf3_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_4, int_array_5, cached_torch_dtype_float32, cached_torch_device_type_cpu,  0, &buf3_handle));
    RAIIAtenTensorHandle buf3(buf3_handle);
    AtenTensorHandle buf4_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_0, int_array_1, cached_torch_dtype_float32, cached_torch_device_type_cpu,  0, &buf4_handle));
    RAIIAtenTensorHandle buf4(buf4_handle);
    cpp_fused__softmax_relu_0((const float*)(buf0.data_ptr()), (float*)(buf1.data_ptr()), (float*)(buf3.data_ptr()), (float*)(buf4.data_ptr()));
    output_handles[0] = buf4.release();
} // inductor_entry_impl

#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  cpp_fused__softmax_relu_0(const float* in_ptr0,
                       float* out_ptr0,
                       float* out_ptr1,
                       float* out_ptr2)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            std::unique_ptr<float []> buf_local_buffer_data_0 = std::make_unique<float []>(32L);
            float* local_buffer_data_0 = buf_local_buffer_data_0.get();
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(64L); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = -std::numeric_limits<float>::infinity();
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(32L); x1+=static_cast<int64_t>(1L))
                    {
                        {
                            {
                                auto tmp0 = in_ptr0[static_cast<int64_t>(x1 + 32L*x0)];
                                auto tmp1 = std::max(tmp0, decltype(tmp0)(0));
                                tmp_acc0 = max_propagate_nan(tmp_acc0, tmp1);
                            }
                        }
                    }
                    out_ptr0[static_cast<int64_t>(x0)] = tmp_acc0;
                }
                {
                    float tmp_acc0 = 0;
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(32L); x1+=static_cast<int64_t>(1L))
                    {
                        {
                            {
                                auto tmp0 = in_ptr0[static_cast<int64_t>(x1 + 32L*x0)];
                                auto tmp2 = out_ptr0[static_cast<int64_t>(x0)];
                                auto tmp1 = std::max(tmp0, decltype(tmp0)(0));
                                auto tmp3 = float(tmp1 - tmp2);
                                auto tmp4 = std::exp(tmp3);
                                local_buffer_data_0[static_cast<int64_t>(x1)] = tmp4;
                                tmp_acc0 = tmp_acc0 + tmp4;
                            }
                        }
                    }
                    out_ptr1[static_cast<int64_t>(x0)] = tmp_acc0;
                }
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(32L); x1+=static_cast<int64_t>(1L))
                {
                    {
                        {
                            auto tmp0 = local_buffer_data_0[static_cast<int64_t>(x1)];
                            auto tmp1 = out_ptr1[static_cast<int64_t>(x0)];
                            auto tmp2 = tmp0 / tmp1;
                            out_ptr2[static_cast<int64_t>(x1 + 32L*x0)] = tmp2;
                        }
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}

// Python bindings to call inductor_entry_cpp():
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sstream>
#include <cstdlib>
#include <cerrno>

// This is defined in guards.cpp so we don't need to import PyTorch headers that are slooow.
// We manually link it below to workaround issues with fbcode build.
static void* (*_torchinductor_pyobject_tensor_data_ptr)(PyObject* obj);

template <typename T> static inline T parse_arg(PyObject* args, size_t n) {
    static_assert(std::is_pointer_v<T>, "arg type must be pointer or long");
    return static_cast<T>(_torchinductor_pyobject_tensor_data_ptr(PyTuple_GET_ITEM(args, n)));
}
template <> inline int64_t parse_arg<int64_t>(PyObject* args, size_t n) {
    auto result = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, n));
    if(result == -1 && PyErr_Occurred()) [[unlikely]]
        throw std::runtime_error("expected int arg");
    return result;
}
template <> inline uintptr_t parse_arg<uintptr_t>(PyObject* args, size_t n) {
    auto result = PyLong_AsVoidPtr(PyTuple_GET_ITEM(args, n));
    if(result == reinterpret_cast<void*>(-1) && PyErr_Occurred()) [[unlikely]]
        throw std::runtime_error("expected int arg");
    return reinterpret_cast<uintptr_t>(result);
}
template <> inline float parse_arg<float>(PyObject* args, size_t n) {
    auto result = PyFloat_AsDouble(PyTuple_GET_ITEM(args, n));
    if(result == -1.0 && PyErr_Occurred()) [[unlikely]]
        throw std::runtime_error("expected float arg");
    return static_cast<float>(result);
}


#include <torch/csrc/inductor/aoti_torch/c/shim.h>

static inline std::vector<AtenTensorHandle> unpack_tensor_handle_list(PyObject* pyvec) {
    std::vector<AtenTensorHandle> result;
    size_t result_len = PyList_GET_SIZE(pyvec);
    result.reserve(result_len);
    for (size_t i = 0; i < result_len; i++) {
        PyObject* item = PyList_GET_ITEM(pyvec, i);
        if (item == Py_None) {
            result.push_back(nullptr);
            continue;
        }
        // AtenTensorHandle is essentially a pointer
        void* elem = PyCapsule_GetPointer(item, NULL);
        if (elem == nullptr && PyErr_Occurred()) {
            PyErr_Clear();
            throw std::runtime_error(
                "expected input handle to be a PyCapsule or None"
            );
        }
        result.push_back(reinterpret_cast<AtenTensorHandle>(elem));
    }
    return result;
}

static inline PyObject* pack_tensor_handle_list(const std::array<AtenTensorHandle, 1>& arr) {
    PyObject* result = PyList_New(1);
    for (size_t i = 0; i < 1; i++) {
        PyObject *elem =
            arr[i] == nullptr
                ? Py_NewRef(Py_None)
                // Store AtenTensorHandle as PyCapsulate
                : PyCapsule_New(reinterpret_cast<void*>(arr[i]), NULL, NULL);
        PyList_SET_ITEM(result, i, elem);
    }
    return result;
}

template <> inline std::vector<AtenTensorHandle> parse_arg<std::vector<AtenTensorHandle>>(PyObject* args, size_t n) {
    return unpack_tensor_handle_list(PyTuple_GET_ITEM(args, n));
}

PyObject* inductor_entry_cpp(std::vector<AtenTensorHandle>&& input_handles) {
    // For outputs, we only allocate an array to hold returned tensor handles,
    // not the actual output tensor storage.
    std::array<AtenTensorHandle, 1> output_handles{};
    try {
        inductor_entry_impl(input_handles.data(), output_handles.data());
        if (PyErr_Occurred()) {
            return nullptr;
        }
        return pack_tensor_handle_list(output_handles);
    } catch(std::exception const& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
        return nullptr;
    } catch(...) {
        PyErr_SetString(PyExc_RuntimeError, "unhandled error");
        return nullptr;
    }
}


static PyObject* inductor_entry_cpp_py(PyObject* self, PyObject* args) {
    try {
        if(!PyTuple_CheckExact(args)) [[unlikely]]
            throw std::runtime_error("tuple args required");
        if(PyTuple_GET_SIZE(args) != 1) [[unlikely]]
            throw std::runtime_error("requires 1 args");
        return inductor_entry_cpp(parse_arg<std::vector<AtenTensorHandle>>(args, 0));
    } catch(std::exception const& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
        return nullptr;
    } catch(...) {
        PyErr_SetString(PyExc_RuntimeError, "unhandled error");
        return nullptr;
    }
}

static PyMethodDef py_methods[] = {
    {"inductor_entry_cpp", inductor_entry_cpp_py, METH_VARARGS, ""},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef py_module =
    {PyModuleDef_HEAD_INIT, "inductor_entry_cpp", NULL, -1, py_methods};

PyMODINIT_FUNC PyInit_inductor_entry_cpp(void) {
    const char* str_addr = std::getenv("_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR");
    if(!str_addr) {
        PyErr_SetString(PyExc_RuntimeError, "_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR must be set");
        return nullptr;
    }

    char* endptr = nullptr;
    errno = 0;
    uintptr_t addr = std::strtoull(str_addr, &endptr, 10);
    if(errno != 0 || endptr == str_addr || addr == 0) {
        PyErr_SetString(PyExc_RuntimeError, "Failed to parse _TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR");
        return nullptr;
    }
    _torchinductor_pyobject_tensor_data_ptr =
        reinterpret_cast<decltype(_torchinductor_pyobject_tensor_data_ptr)>(addr);
    PyObject* module = PyModule_Create(&py_module);
    if (module == NULL) {
        return NULL;
    }
    #ifdef Py_GIL_DISABLED
        PyUnstable_Module_SetGIL(module, Py_MOD_GIL_NOT_USED);
    #endif
    return module;
}

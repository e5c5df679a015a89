/* A C extension that allocates device memory as PyTorch's bindings do: the GIL released around
 * the driver's call. Also one allocation made on a native thread that never had a Python thread
 * state. The driver is the simulated one ($GPUMEM_CUDA_LIBRARY). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

typedef int (*Alloc)(unsigned long long*, size_t);
typedef int (*Context)(void**);
typedef int (*SetContext)(void*);

static Alloc driver_alloc(void) {
  void* cuda = dlopen(getenv("GPUMEM_CUDA_LIBRARY"), RTLD_NOW | RTLD_GLOBAL);
  return cuda == NULL ? NULL : (Alloc)dlsym(cuda, "cuMemAlloc_v2");
}

/* allocate_released(bytes): the allocation with the GIL released; returns the driver's status. */
static PyObject* allocate_released(PyObject* self, PyObject* args) {
  unsigned long long bytes = 0, pointer = 0;
  int status = -1;
  Alloc alloc = driver_alloc();
  (void)self;
  if (!PyArg_ParseTuple(args, "K", &bytes) || alloc == NULL) return NULL;
  Py_BEGIN_ALLOW_THREADS
  status = alloc(&pointer, (size_t)bytes);
  Py_END_ALLOW_THREADS
  return PyLong_FromLong(status);
}

struct Request {
  Alloc alloc;
  SetContext set_context;
  void* context;
  unsigned long long bytes;
  int status;
};

__attribute__((noinline, visibility("default"))) void* native_worker(void* data) {
  struct Request* request = (struct Request*)data;
  unsigned long long pointer = 0;
  if (request->set_context(request->context) != 0) return NULL;
  request->status = request->alloc(&pointer, (size_t)request->bytes);
  return NULL;
}

/* allocate_on_native_thread(bytes): the allocation on a thread with no Python thread state. */
static PyObject* allocate_on_native_thread(PyObject* self, PyObject* args) {
  struct Request request = {driver_alloc(), NULL, NULL, 0, -1};
  void* cuda = dlopen(getenv("GPUMEM_CUDA_LIBRARY"), RTLD_NOW | RTLD_GLOBAL);
  Context get_context = cuda == NULL ? NULL : (Context)dlsym(cuda, "cuCtxGetCurrent");
  pthread_t thread;
  (void)self;
  request.set_context = cuda == NULL ? NULL : (SetContext)dlsym(cuda, "cuCtxSetCurrent");
  if (!PyArg_ParseTuple(args, "K", &request.bytes) || request.alloc == NULL ||
      get_context == NULL || request.set_context == NULL || get_context(&request.context) != 0)
    return NULL;
  Py_BEGIN_ALLOW_THREADS
  if (pthread_create(&thread, NULL, native_worker, &request) == 0) pthread_join(thread, NULL);
  Py_END_ALLOW_THREADS
  return PyLong_FromLong(request.status);
}

static PyMethodDef methods[] = {
    {"allocate_released", allocate_released, METH_VARARGS, "cuMemAlloc with the GIL released"},
    {"allocate_on_native_thread", allocate_on_native_thread, METH_VARARGS,
     "cuMemAlloc on a thread without a Python thread state"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "gil_release_ext", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_gil_release_ext(void) {
  return PyModule_Create(&module);
}

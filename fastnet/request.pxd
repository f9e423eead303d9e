# C declarations for request.py, which Cython compiles in place (pure-Python mode).
cimport cython
from fastnet.headers cimport Headers, as_headers


cpdef str check_method(object method)


@cython.locals(new=Request)
cpdef Request make_request(str method, object url, Headers headers, RequestBody body, object proxy,
                           object tag)


cdef class RequestBody:
    cdef public object _data
    cdef public int _kind
    cdef public long long length
    cdef public object content_type
    cdef public bint one_shot
    cdef public long long _start
    cdef public bint _used


cdef class Request:
    cdef readonly str method
    cdef readonly object url
    cdef readonly Headers headers
    cdef readonly RequestBody body
    cdef readonly object proxy
    cdef readonly object tag
    cdef readonly object _options

    cpdef Request with_headers(self, Headers headers)

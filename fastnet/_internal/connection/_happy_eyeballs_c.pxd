# Declarations that compile _happy_eyeballs_py.py as the typed module _happy_eyeballs_c.
cimport cython
from fastnet._internal.connection._kernel_timeout_c cimport set_kernel_timeout
from fastnet._route_c cimport is_ip_literal

cdef int _AF_INET
cdef int _AF_INET6
cdef int _SOCK_STREAM
cdef int _SO_SNDTIMEO
cdef int _IPPROTO_TCP
cdef int _TCP_NODELAY
cdef object _C_SOCKET


cdef class _Attempt:
    cdef public object route
    cdef public object target
    cdef public object sock
    cdef public double deadline


@cython.locals(host=str)
cpdef tuple sockaddr_of(tuple target)
cpdef object new_socket(int family, object local_address)


@cython.locals(cooperative=bint)
cpdef tuple connect_one(object route, tuple target, double timeout, object on_failure, object on_socket,
                        object name, object local_address)
cpdef object connect_error(int code)

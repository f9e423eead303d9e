# C declarations for call_server.py, which Cython compiles in place (pure-Python mode).
cimport cython
from fastnet._internal._sync.chain cimport InternalInterceptor, RealInterceptorChain
from fastnet._internal.connection.connection_user cimport ConnectionUser
from fastnet._internal._sync.real_connection cimport RealConnection
from fastnet._internal.http1.codec cimport expects_continue, open_response, request_framing, request_head
from fastnet._internal._sync.exchange cimport Exchange
from fastnet.request cimport Request
from fastnet.response cimport Response
from fastnet.timings cimport Timings, new_timings


cdef class CallServerInterceptor(InternalInterceptor):
    @cython.locals(exchange=Exchange, call=ConnectionUser, request=Request, conn=RealConnection,
                   response=Response, head_request=bint, keep_alive=bint, body_mode=int, head=bytes,
                   parsed=tuple, framing=cython.longlong, timings=Timings)
    cpdef Response intercept(self, RealInterceptorChain chain)

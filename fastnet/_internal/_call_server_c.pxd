# Declarations that compile _call_server_py.py as the typed module _call_server_c (Cython pure-Python mode).
cimport cython
from fastnet._internal._chain_c cimport InternalInterceptor, RealInterceptorChain
from fastnet._internal.connection._connection_user_c cimport ConnectionUser
from fastnet._internal.connection._real_connection_c cimport RealConnection
from fastnet._internal.http1._codec_c cimport expects_continue, open_response, request_framing, request_head
from fastnet._internal.http1._exchange_c cimport Exchange
from fastnet._request_c cimport Request
from fastnet._response_c cimport Response
from fastnet._timings_c cimport Timings, new_timings


cdef class CallServerInterceptor(InternalInterceptor):
    @cython.locals(exchange=Exchange, call=ConnectionUser, request=Request, conn=RealConnection,
                   response=Response, head_request=bint, keep_alive=bint, body_mode=int, head=bytes,
                   parsed=tuple, framing=cython.longlong, timings=Timings)
    cpdef Response intercept(self, RealInterceptorChain chain)

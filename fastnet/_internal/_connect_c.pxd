# Declarations that compile _connect_py.py as the typed module _connect_c (Cython pure-Python mode).
cimport cython
from fastnet._internal._chain_c cimport InternalInterceptor, RealInterceptorChain
from fastnet._internal.connection._connection_user_c cimport ConnectionUser
from fastnet._internal.connection._connector_c cimport Connector
from fastnet._internal.connection._exchange_finder_c cimport find_connection
from fastnet._internal.connection._real_connection_c cimport RealConnection
from fastnet._internal.http1._exchange_c cimport Exchange, new_exchange
from fastnet._request_c cimport Request
from fastnet._response_c cimport Response


cdef class ConnectInterceptor(InternalInterceptor):
    cdef public Connector connector

    @cython.locals(call=ConnectionUser, request=Request, connection=RealConnection, exchange=Exchange,
                   previous=Exchange)
    cpdef Response intercept(self, RealInterceptorChain chain)

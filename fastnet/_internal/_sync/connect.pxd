# C declarations for connect.py, which Cython compiles in place (pure-Python mode).
cimport cython
from fastnet._internal._sync.chain cimport InternalInterceptor, RealInterceptorChain
from fastnet._internal.connection.connection_user cimport ConnectionUser
from fastnet._internal.connection.connector cimport Connector
from fastnet._internal._sync.exchange_finder cimport find_connection
from fastnet._internal._sync.real_connection cimport RealConnection
from fastnet._internal._sync.exchange cimport Exchange, new_exchange
from fastnet.request cimport Request
from fastnet.response cimport Response


cdef class ConnectInterceptor(InternalInterceptor):
    cdef public Connector connector

    @cython.locals(call=ConnectionUser, request=Request, connection=RealConnection, exchange=Exchange,
                   previous=Exchange)
    cpdef Response intercept(self, RealInterceptorChain chain)

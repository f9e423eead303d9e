# C declarations for exchange_finder.py, which Cython compiles in place (pure-Python mode).
cimport cython
from fastnet._internal.util.clock cimport monotonic
from fastnet._internal.connection.route_selector cimport RouteSelector
from fastnet._internal.connection.connection_user cimport ConnectionUser
from fastnet._internal.connection.connector cimport Connector
from fastnet._internal._sync.happy_eyeballs cimport connect_one
from fastnet._internal._sync.pool cimport RealConnectionPool
from fastnet._internal._sync.real_connection cimport RealConnection
from fastnet.request cimport Request
from fastnet.route cimport Address, Route, is_ip_literal


@cython.locals(address=Address, pool=RealConnectionPool, conn=RealConnection, now=double,
               finder=ExchangeFinder, held=RealConnection)
cpdef RealConnection find_connection(Connector connector, ConnectionUser user, Request request,
                                     double connect_timeout, double read_timeout)


@cython.locals(deadline=double, bound=double)
cpdef double slot_deadline(ConnectionUser user, double connect_timeout)


cdef class ExchangeFinder:
    cdef public Connector connector
    cdef public ConnectionUser user
    cdef public Address address
    cdef public RouteSelector selector
    cdef public list pending
    cdef public bint canceled
    cdef public object connecting
    cdef public set tried
    cdef public double dns_time
    cdef public double tls_time
    cdef dict _proxy_ips

    @cython.locals(pool=RealConnectionPool)
    cpdef RealConnection find(self, double connect_timeout, double read_timeout)
    cpdef RouteSelector _selector(self)
    cpdef tuple _target_of(self, Route route)
    cpdef object _establish(self, object sock, Route route, double connect_timeout, double handshake_timeout,
                            bint handshake)

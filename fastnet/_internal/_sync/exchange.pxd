# C declarations for exchange.py, which Cython compiles in place (pure-Python mode).
cimport cython
from fastnet._internal.util.clock cimport monotonic
from fastnet.timings cimport Timings
from fastnet._internal.connection.connection_user cimport ConnectionUser
from fastnet._internal._sync.real_connection cimport RealConnection
from fastnet._internal.http1.codec cimport frame_chunk, map_io_error
from fastnet._internal.http1.parser cimport ResponseParser
from fastnet.request cimport Request, RequestBody
from fastnet.response cimport ResponseBodySource


cdef class Exchange(ResponseBodySource):
    cdef public ConnectionUser user
    cdef public RealConnection connection
    cdef public Request request
    cdef public int body_mode
    cdef public bint keep_alive
    cdef public object decompressor
    cdef public long long body_bytes
    cdef public bint failed
    cdef public bint head_request
    cdef public str content_encoding
    cdef public bint headers_started
    cdef public bint body_started
    cdef public Timings timings
    cdef public object pending

    @cython.locals(conn=RealConnection, data=bytes, user=ConnectionUser, wrote_head=bint, timings=Timings)
    cpdef object write_request(self, bytes head, RequestBody body, long long framing, bint expect_continue)

    @cython.locals(user=ConnectionUser, total=cython.longlong, chunked=bint, conn=RealConnection)
    cpdef write_body(self, RequestBody body, long long framing)

    @cython.locals(conn=RealConnection, n=Py_ssize_t, timings=Timings)
    cpdef Py_ssize_t fill(self, bint in_head) except -1

    @cython.locals(received=bint, n=Py_ssize_t, parser=ResponseParser, interim=int, status=int)
    cpdef object read_head(self, bint head_request, bint expect_continue=*)

    @cython.locals(parser=ResponseParser, user=ConnectionUser)
    cpdef object _next_raw(self)
    cpdef object read_chunk(self)

    @cython.locals(conn=RealConnection, user=ConnectionUser, remaining=cython.longlong, total=Py_ssize_t,
                   received=Py_ssize_t, content=bytes, parser=ResponseParser, limit=cython.longlong)
    cpdef bytes read_all(self)

    @cython.locals(size=cython.longlong, limit=cython.longlong)
    cpdef bytes read_rest(self)
    cpdef _start_body(self)

    @cython.locals(conn=RealConnection, reusable=bint, user=ConnectionUser, timings=Timings)
    cpdef finish(self, bint complete)

    cpdef interrupted(self)

    @cython.locals(conn=RealConnection, timings=Timings)
    cpdef fail_body(self, object exc)

    @cython.locals(conn=RealConnection, parser=ResponseParser)
    cpdef close_body(self)

    @cython.locals(conn=RealConnection)
    cpdef abandon(self)

    @cython.locals(user=ConnectionUser)
    cpdef object map_error(self, object exc, str phase)


@cython.locals(exchange=Exchange)
cpdef Exchange new_exchange(ConnectionUser user, RealConnection connection, Request request)

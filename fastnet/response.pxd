# C declarations for response.py, which Cython compiles in place (pure-Python mode).
# ResponseBodySource is the interface the HTTP/1.1 exchange implements (it cimports it from here).
cimport cython
from fastnet.headers cimport Headers, as_headers
from fastnet.request cimport Request


@cython.locals(response=Response)
cpdef Response make_response(int status_code, str reason, str protocol, Headers headers, Request request,
                             object route)


cdef class ResponseBodySource:
    cdef public bint done

    cpdef bytes read_all(self)
    cpdef object read_chunk(self)
    cpdef close_body(self)
    cpdef abandon(self)


cdef class Response:
    cdef public int status_code
    cdef public str reason
    cdef public Headers headers
    cdef public Request request
    cdef public str protocol
    cdef public object prior_response
    cdef public bytes _content
    cdef public ResponseBodySource _source
    cdef public bint _unreadable
    cdef public bint _closed
    cdef public object network_response
    cdef public object route
    cdef public object timings
    cdef public object _encoding
    cdef object __weakref__

    @cython.locals(source=ResponseBodySource)
    cpdef bytes read(self)

    @cython.locals(source=ResponseBodySource)
    cpdef close(self)
    cpdef Response _stripped(self)

# The compiled parser's declarations, so the compiled per-request path (_core_c) can call it directly.
from libc.stdint cimport int64_t


cdef struct HeadInfo:
    int has_cl
    const char* cl_ptr     # first Content-Length piece, for the "identical repeats" rule
    Py_ssize_t cl_len
    int64_t cl_value
    int has_te
    int conn_close
    int conn_keep_alive


cdef class ResponseParser:
    cdef char* _buf
    cdef Py_ssize_t _cap
    cdef Py_ssize_t _start
    cdef Py_ssize_t _end
    cdef Py_ssize_t _scan        # resume offset (relative to _start) of the block-end search
    cdef Py_ssize_t _line        # start (relative) of the current incomplete line
    cdef bint _eof
    cdef int _state
    cdef int _mode
    cdef int64_t _remaining      # BODY_LENGTH: bytes left; chunked: bytes left in the chunk
    cdef Py_ssize_t _max_header
    cdef Py_ssize_t _max_line
    cdef public list trailers
    cdef object _ce             # last Content-Encoding value of the block being parsed

    cdef int _append(self, const char* data, Py_ssize_t n) except -1
    cpdef feed(self, object data)
    cpdef feed_from(self, bytearray buffer, Py_ssize_t n)
    cpdef bytes take_buffered(self)
    cpdef skip_body_bytes(self, int64_t n)
    cdef object _fail(self, str message)
    cdef object _quote_at(self, const char* p, Py_ssize_t n)
    cdef Py_ssize_t _find_block_end(self) except -2
    cdef int _check_incomplete(self, str what) except -1
    cdef int _header_line(self, const char* p, Py_ssize_t n, list out, HeadInfo* info) except -1
    cdef list _header_block(self, const char* p, Py_ssize_t n, HeadInfo* info)
    cpdef object read_head(self, bint head_request=*)
    cpdef object read_body(self)
    cdef object _read_chunked(self)
    cdef int _trailers(self, const char* base, Py_ssize_t end) except -1
    # last, so units compiled against the earlier declarations keep their vtable offsets
    cdef list _header_block_unfolded(self, const char* p, Py_ssize_t n, HeadInfo* info)

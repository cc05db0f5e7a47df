/* read_and_scan(path, limit): a file's bytes and scan() of them, with the
 * GIL released for the reading as for the lexing. The pre-scan's threads then
 * read in parallel too: os.read releases the GIL, but the Python around each
 * of thousands of small files holds it, and the threads took turns.
 *
 * The same pass folds the code digest (digest.c), so a run that writes the
 * cache lexes each file once; and the file's stat as it was opened (its size,
 * modification time and inode: what a later run compares) comes from the
 * descriptor the bytes were read from. Only a regular file is read: it is
 * opened without blocking (a FIFO with no writer would wait forever) and
 * refused after fstat if it is anything else. */

#include "scan.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
#ifndef O_NOCTTY
#define O_NOCTTY 0
#endif

/* Said for a path that is no regular file (and no folder, which says EISDIR). */
#define NOT_REGULAR "not a regular file (a FIFO, a device or a socket)"

static PyObject *failed(int error, PyObject *path) {
    errno = error;
    return PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path);
}

PyObject *read_and_scan(PyObject *module, PyObject *args) {
    PyObject *path, *encoded;
    Py_ssize_t limit;
    int with_digest = 1; /* the code digest only a cache needs: a run without one skips its folding */
    if (!PyArg_ParseTuple(args, "On|p:read_and_scan", &path, &limit, &with_digest)) return NULL;
    if (!PyUnicode_FSConverter(path, &encoded)) return NULL;
    int fd, error = 0;
    struct stat info;
    Py_BEGIN_ALLOW_THREADS
    fd = open(PyBytes_AS_STRING(encoded), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0 || fstat(fd, &info) != 0) error = errno;
    else if (!S_ISREG(info.st_mode)) error = S_ISDIR(info.st_mode) ? EISDIR : -1;
    Py_END_ALLOW_THREADS
    Py_DECREF(encoded);
    if (error) {
        if (fd >= 0) close(fd);
        if (error == -1) {
            PyErr_SetString(PyExc_OSError, NOT_REGULAR);
            return NULL;
        }
        return failed(error, path);
    }
    Py_ssize_t size = (Py_ssize_t)info.st_size;
    if (size > limit) {
        close(fd);
        return Py_BuildValue("(On)", Py_None, size); /* too big: the caller says so */
    }
    PyObject *data = PyBytes_FromStringAndSize(NULL, size);
    if (data == NULL) {
        close(fd);
        return NULL;
    }
    unsigned char *s = (unsigned char *)PyBytes_AS_STRING(data);
    Py_ssize_t got = 0;
    Found found;
    CodeDigest digest;
    int status = 0;
    Py_BEGIN_ALLOW_THREADS
    while (got < size) {
        ssize_t count = read(fd, s + got, (size_t)(size - got));
        if (count < 0 && errno == EINTR) continue;
        if (count < 0) {
            error = errno;
            break;
        }
        if (count == 0) break; /* the file shrank since fstat: what there is */
        got += count;
    }
    close(fd);
    if (!error) status = scan_find(s, got, &found, with_digest ? &digest : NULL);
    Py_END_ALLOW_THREADS
    if (error) {
        Py_DECREF(data);
        return failed(error, path);
    }
    if (got < size && _PyBytes_Resize(&data, got) < 0) return scan_result(s, -1, &found); /* frees it */
    s = (unsigned char *)PyBytes_AS_STRING(data);
    PyObject *scanned = scan_result(s, status, &found);
    if (scanned == NULL) {
        Py_DECREF(data);
        return NULL;
    }
    PyObject *code = !error && with_digest && digest.complete ? code_digest_bytes(&digest) : Py_NewRef(Py_None);
    if (code == NULL) {
        Py_DECREF(data);
        Py_DECREF(scanned);
        return NULL;
    }
#ifdef __APPLE__
    long long mtime_ns = (long long)info.st_mtimespec.tv_sec * 1000000000LL + info.st_mtimespec.tv_nsec;
    long long ctime_ns = (long long)info.st_ctimespec.tv_sec * 1000000000LL + info.st_ctimespec.tv_nsec;
#else
    long long mtime_ns = (long long)info.st_mtim.tv_sec * 1000000000LL + info.st_mtim.tv_nsec;
    long long ctime_ns = (long long)info.st_ctim.tv_sec * 1000000000LL + info.st_ctim.tv_nsec;
#endif
    /* The stat key (_keys.stat_key) of what was read: as os.stat gives it. */
    return Py_BuildValue("(NNN(LLKL))", data, scanned, code, (long long)info.st_size, mtime_ns,
                         (unsigned long long)info.st_ino, ctime_ns);
}

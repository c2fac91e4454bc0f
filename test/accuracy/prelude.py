# What every generated program shares. The generator puts its constants
# (paths, ports) before this, and the blocks and main() after.


def fail(why):
    # A program that did not run as built is no test of whyslow: exit 3,
    # which the test reports as the generator's fault, not a miss.
    print('accuracy program failed: ' + why, file=sys.stderr, flush=True)
    os._exit(3)


def thread_raised(args):
    traceback.print_exception(args.exc_type, args.exc_value, args.exc_traceback)
    fail('a thread raised')


threading.excepthook = thread_raised


def timed(name, fn):
    # Each block's seconds go to TIMES, for the report of a miss.
    t0 = time.monotonic()
    fn()
    with open(TIMES, 'a') as f:
        f.write('%s %.4f\n' % (name, time.monotonic() - t0))


def busy(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def fork(fn):
    # fn in a child process; its pid. The child exits 3 if fn raised.
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            fn()
        except BaseException:
            traceback.print_exc()
            code = 3
        os._exit(code)
    return pid


def wait_child(pid):
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        fail('child %d ended with status %d' % (pid, status))


def exec_wait(block):
    # A new interpreter on this file, calling one function: a child that
    # exec'd, not a fork.
    pid = os.posix_spawn(sys.executable, [sys.executable, __file__, 'child', block], os.environ)
    wait_child(pid)


def in_thread(name, fn):
    t = threading.Thread(target=timed, args=(name, fn))
    t.start()
    return t


def cold_read(offset, size, how):
    # READ_FILE's pages were evicted before the program began: each byte
    # of [offset, offset+size) comes from the slow disk.
    fd = os.open(READ_FILE, os.O_RDONLY)
    try:
        if how == 'mmap':
            m = mmap.mmap(fd, size, prot=mmap.PROT_READ, offset=offset)
            for i in range(0, size, mmap.PAGESIZE):
                m[i]
            m.close()
        elif how == 'read':
            os.lseek(fd, offset, os.SEEK_SET)
            left = size
            while left > 0:
                n = len(os.read(fd, min(64 << 10, left)))
                if n == 0:
                    fail('short read')
                left -= n
        else:
            end = offset + size
            while offset < end:
                n = len(os.pread(fd, min(MiB, end - offset), offset))
                if n == 0:
                    fail('short read')
                offset += n
    finally:
        os.close(fd)


ZEROS = memoryview(bytes(MiB))


def write_file(name, size, sync, buffered=False):
    # size bytes to SCRATCH/name, then fsync or fdatasync of them if asked.
    path = os.path.join(SCRATCH, name)
    if buffered:
        with open(path, 'wb', buffering=64 << 10) as f:
            left = size
            while left > 0:
                left -= f.write(ZEROS[:min(MiB, left)])
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        left = size
        while left > 0:
            left -= os.write(fd, ZEROS[:min(MiB, left)])
        if sync == 'fsync':
            os.fsync(fd)
        elif sync == 'fdatasync':
            os.fdatasync(fd)
    finally:
        os.close(fd)


def answer(s):
    # The slow server's answer: a line.
    data = b''
    while not data.endswith(b'\n'):
        got = s.recv(64)
        if not got:
            fail('the server closed the connection')
        data += got

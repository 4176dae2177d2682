#include "report_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/strbuf.h"

static void report_free(sy_report_file *r)
{
    free(r->tmp_path);
    free(r->target);
    free(r->path);
    memset(r, 0, sizeof *r);
}

static int open_failed(sy_report_file *r, const char *why)
{
    fprintf(stderr, "switchyard: cannot write %s: %s\n", r->path, why);
    report_free(r);
    return -1;
}

/* mkstemp creates the file 0600; a report is an ordinary output file and gets the mode any other
 * file written here would (0666 less the umask). The CLI is single-threaded here, so reading the
 * umask by setting it back at once is safe. */
static int open_temporary(sy_report_file *r)
{
    r->tmp_path = sy_asprintf("%s.tmp.XXXXXX", r->target);
    int fd = mkstemp(r->tmp_path);
    if (fd < 0)
        return -1;
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0 || !(r->f = fdopen(fd, "w"))) {
        int saved = errno;
        close(fd);
        unlink(r->tmp_path);
        errno = saved;
        return -1;
    }
    return 0;
}

/* A FIFO, character device or socket: written through, never replaced. */
static int open_in_place(sy_report_file *r)
{
    int fd = open(r->target, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (!(r->f = fdopen(fd, "w"))) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return 0;
}

int sy_report_open(sy_report_file *r, const char *path)
{
    memset(r, 0, sizeof *r);
    r->path = sy_strdup(path);
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        char *resolved = realpath(path, NULL);
        /* A dangling link: open() follows it and creates its target, in place. */
        if (!resolved) {
            r->target = sy_strdup(path);
            return open_in_place(r) == 0 ? 0 : open_failed(r, strerror(errno));
        }
        r->target = resolved;
    } else {
        r->target = sy_strdup(path);
    }
    if (stat(r->target, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return open_failed(r, "it is a directory");
        if (!S_ISREG(st.st_mode))
            return open_in_place(r) == 0 ? 0 : open_failed(r, strerror(errno));
    }
    return open_temporary(r) == 0 ? 0 : open_failed(r, strerror(errno));
}

int sy_report_commit(sy_report_file *r)
{
    int failed = 0, saved = 0;
    errno = 0;
    if (fflush(r->f) != 0 || ferror(r->f)) {
        failed = 1;
        saved = errno ? errno : EIO;
    } else if (r->tmp_path && fsync(fileno(r->f)) != 0) {
        /* Only a file that will be renamed needs it: fsync of a FIFO or a terminal fails (EINVAL). */
        failed = 1;
        saved = errno;
    }
    if (fclose(r->f) != 0 && !failed) {
        failed = 1;
        saved = errno;
    }
    r->f = NULL;
    if (!failed && r->tmp_path && rename(r->tmp_path, r->target) != 0) {
        failed = 1;
        saved = errno;
    }
    if (failed) {
        /* Removed before the message: printing may end the process (a closed stderr pipe). */
        if (r->tmp_path)
            unlink(r->tmp_path);
        fprintf(stderr, "switchyard: cannot write %s: %s\n", r->path, strerror(saved));
    }
    report_free(r);
    return failed ? -1 : 0;
}

void sy_report_abort(sy_report_file *r)
{
    if (r->f)
        fclose(r->f);
    if (r->tmp_path)
        unlink(r->tmp_path);
    report_free(r);
}

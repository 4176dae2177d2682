#include "report_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/strbuf.h"

int sy_report_open(sy_report_file *r, const char *path)
{
    memset(r, 0, sizeof *r);
    r->path = sy_strdup(path);
    r->tmp_path = sy_asprintf("%s.tmp.XXXXXX", path);
    int fd = mkstemp(r->tmp_path);
    /* mkstemp creates the file 0600; a report is an ordinary output file and gets the mode any
     * other file written here would (0666 less the umask). The CLI is single-threaded here, so
     * reading the umask by setting it back at once is safe. */
    mode_t mask = umask(0);
    umask(mask);
    if (fd >= 0 && fchmod(fd, 0666 & ~mask) != 0) {
        close(fd);
        unlink(r->tmp_path);
        fd = -1;
    }
    if (fd < 0 || !(r->f = fdopen(fd, "w"))) {
        fprintf(stderr, "switchyard: cannot write %s: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(r->tmp_path);
        free(r->path);
        memset(r, 0, sizeof *r);
        return -1;
    }
    return 0;
}

int sy_report_commit(sy_report_file *r)
{
    int failed = fflush(r->f) != 0 || ferror(r->f) || fsync(fileno(r->f)) != 0;
    failed |= fclose(r->f) != 0;
    if (!failed && rename(r->tmp_path, r->path) != 0)
        failed = 1;
    if (failed) {
        fprintf(stderr, "switchyard: cannot write %s: %s\n", r->path, strerror(errno));
        unlink(r->tmp_path);
    }
    free(r->tmp_path);
    free(r->path);
    memset(r, 0, sizeof *r);
    return failed ? -1 : 0;
}

void sy_report_abort(sy_report_file *r)
{
    if (r->f)
        fclose(r->f);
    if (r->tmp_path)
        unlink(r->tmp_path);
    free(r->tmp_path);
    free(r->path);
    memset(r, 0, sizeof *r);
}

#!/bin/sh
# tests/install_test.sh BUILD -- `make install` into a temporary DESTDIR,
# then a C program built with `pkg-config --cflags --libs rlm` against
# what it installed, run with the installed librlm.so.0: it solves on the
# simulator through api/api.h and through rlm/rlm.h. Run from the top of
# the tree (test_api's install test does). Prints "install test: ok" last.
set -eu
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=/usr/local
dest=$tmp/root
# Not the make that may be running us (its jobserver is not ours).
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s BUILD="$build" DESTDIR="$dest" \
    PREFIX=$prefix install >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; exit 1; }
for f in bin/rlm lib/librlm.so.0 lib/librlm.so lib/pkgconfig/rlm.pc include/rlm/rlm/rlm.h \
         include/rlm/api/api.h include/rlm/llm/llm.h include/rlm/common/common.h \
         include/rlm/common/text.h include/rlm/corpus/corpus.h include/rlm/store/store.h \
         include/rlm/sim/sim.h; do
    [ -e "$dest$prefix/$f" ] || { echo "not installed: $prefix/$f"; exit 1; }
done
[ -L "$dest$prefix/lib/librlm.so" ] || { echo "lib/librlm.so is not a symlink"; exit 1; }
soname=$(readelf -d "$dest$prefix/lib/librlm.so.0" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = librlm.so.0 ] || { echo "soname '$soname', want librlm.so.0"; exit 1; }

cat > "$tmp/prog.c" <<'PROG'
/* Solve on the simulator through both headers of the installed library. */
#include <rlm/rlm.h>
#include <api/api.h>
#include <sim/sim.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	static const char ctx[] = "Notes.\nThe vault code is 9182.\nEnd of notes.\n";
	char *err = NULL, *out;
	struct rlm_api *a = rlm_api_new("{\"provider\": \"sim\", \"env\": false}", &err);
	struct rlm_models_cfg mc;
	struct rlm_models ms;
	struct rlm_opts o;
	struct rlm_result r;
	struct rlm_err e = {0, ""};
	struct corpus *c;
	int rc;
	if (!a) {
		fprintf(stderr, "rlm_api_new: %s\n", err);
		return 1;
	}
	out = rlm_api_solve(a, "What is the vault code?", ctx, strlen(ctx), "text", NULL, NULL,
			    NULL, NULL, &err);
	if (!out || !strstr(out, "9182")) {
		fprintf(stderr, "rlm_api_solve: %s\n", out ? out : err);
		return 1;
	}
	printf("api: %s\n", rlm_api_version());
	rlm_api_free(out);
	rlm_api_close(a);

	sim_provider_register();
	rlm_models_cfg_init(&mc);
	mc.provider = "sim";
	mc.quiet = true;
	if (rlm_models_init(&ms, &mc, &e)) {
		fprintf(stderr, "rlm_models_init: %s\n", e.msg);
		return 1;
	}
	memset(&o, 0, sizeof(o));
	o.pool = ms.pool;
	o.model = ms.model;
	o.sub_model = ms.sub;
	o.params = ms.params;
	c = corpus_from_text(ctx, strlen(ctx));
	rc = rlm_solve(&o, "What is the vault code?", c, &r, &e);
	if (rc || !r.answer || !strstr(r.answer, "9182")) {
		fprintf(stderr, "rlm_solve: %d %s %s\n", rc, e.msg, r.answer ? r.answer : "");
		return 1;
	}
	printf("rlm.h: %s (%s)\n", r.answer, rlm_stop_name(r.stop));
	rlm_result_release(&r);
	corpus_free(c);
	rlm_models_release(&ms);
	return 0;
}
PROG
# The .pc names /usr/local; the sysroot puts its -I and -L in DESTDIR.
export PKG_CONFIG_PATH="$dest$prefix/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest"
flags=$(pkg-config --cflags --libs rlm)
case $flags in *-lrlm*) ;; *) echo "pkg-config --libs rlm: no -lrlm: $flags"; exit 1;; esac
cc -std=c11 -Wall -Werror -o "$tmp/prog" "$tmp/prog.c" $flags
readelf -d "$tmp/prog" | grep -q 'NEEDED.*\[librlm.so.0\]' ||
    { echo "prog does not need librlm.so.0"; exit 1; }
LD_LIBRARY_PATH="$dest$prefix/lib" "$tmp/prog"
# the Python package, when the tree has it: in the site directory, with
# the library inside, and importable from there
if [ -d python/crlm ]; then
    ver=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    site=$dest$prefix/lib/python$ver/dist-packages
    [ -f "$site/crlm/__init__.py" ] && [ -f "$site/crlm/librlm.so.0" ] ||
        { echo "crlm not installed in $site"; exit 1; }
    # where the unstaged install would be is on python3's own path: a
    # plain `make install` needs no PYTHONPATH
    /usr/bin/python3 -c 'import sys; sys.exit(sys.argv[1] not in sys.path)' \
        "$prefix/lib/python$ver/dist-packages" ||
        { echo "$prefix/lib/python$ver/dist-packages is not on python3's sys.path"; exit 1; }
    (cd "$tmp" && env -u RLM_LIB PYTHONPATH="$site" /usr/bin/python3 -c 'import crlm') ||
        { echo "the installed crlm does not import"; exit 1; }
    echo "python: crlm installed"
fi
# the static link too, through Libs.private / Requires.private
pkg-config --static --libs rlm >/dev/null
echo "install test: ok"

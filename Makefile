# rlm -- one non-recursive Makefile. `make help` lists the targets.

BUILD   ?= build
CC      ?= gcc
PKGS    := libcurl libcjson sqlite3 libseccomp libmicrohttpd libxxhash zlib
SAN     ?=
# Debian's python3 (make deps installs it), for the layout checks.
PYTHON  ?= /usr/bin/python3

ifeq ($(CC),cc)
CC := gcc
endif

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla \
        -Wformat=2 -Wcast-qual -Wwrite-strings -Wundef -Wno-format-nonliteral
ifeq ($(DEVELOPER),1)
WARN += -Werror
endif

OPT      ?= -O2
CPPFLAGS += -D_GNU_SOURCE -MMD -MP -I.
CFLAGS   ?=
# Position-independent, symbols hidden unless a public header marks them
# (#pragma GCC visibility push(default)): the same objects make librlm.a,
# the rlm binary, the tests and librlm.so.0, whose dynamic symbols are then
# exactly the public API (check-layout checks it).
CFLAGS   += -std=c11 -g $(OPT) -pthread $(WARN) -fPIC -fvisibility=hidden
LDFLAGS  ?=

# Deferred (=), so that `make deps all` sees the packages deps installed.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS     += $(PKG_CFLAGS)
LDLIBS     = $(PKG_LIBS) -pthread -lm

ifeq ($(SAN),asan)
CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
OPT     := -O1
endif
ifeq ($(SAN),tsan)
CFLAGS  += -fsanitize=thread -fno-omit-frame-pointer
LDFLAGS += -fsanitize=thread
OPT     := -O1
endif
ifeq ($(SAN),fuzz)
CFLAGS  += -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
OPT     := -O1
endif

# ---- sources: a folder is a module ----
MODULES := common llm sim repl store corpus tool rlm api serve bench cli
LIB_SRC := $(filter-out cli/main.c,$(foreach m,$(MODULES),$(wildcard $(m)/*.c)))
EMBED   := $(sort $(wildcard prompts/*.txt) $(wildcard repl/*.py) $(wildcard store/*.html))
GEN_SRC := $(BUILD)/gen/embedded.c
VER_SRC := $(BUILD)/gen/version.c
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/gen/embedded.o \
           $(BUILD)/obj/gen/version.o
LIB     := $(BUILD)/librlm.a
BIN     := $(BUILD)/rlm
# The shared library: soname librlm.so.0 (the ABI of rlm/rlm.h and
# api/api.h), librlm.so a symlink to it for -lrlm.
SONAME  := librlm.so.0
SOLIB   := $(BUILD)/$(SONAME)
SOLINK  := $(BUILD)/librlm.so
# A library missing from the link fails it (not the program that loads the
# .so). Not under the sanitizers, whose runtimes the program brings.
ifeq ($(SAN),)
SO_DEFS := -Wl,-z,defs
endif

TEST_SRC  := $(wildcard tests/test_*.c)
TEST_BINS := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TLIB_SRC  := $(filter-out $(TEST_SRC) $(wildcard tests/fuzz_*.c),$(wildcard tests/*.c))
TLIB_OBJ  := $(TLIB_SRC:%.c=$(BUILD)/obj/%.o)

FUZZ_SRC  := $(wildcard tests/fuzz_*.c)
FUZZ_BINS := $(FUZZ_SRC:tests/%.c=$(BUILD)/tests/%)

.PHONY: all test check asan tsan valgrind fuzz fuzz-bins lint check-layout format format-check \
        bench demo deps clean help install python lib

all: $(BIN) $(SOLINK)

lib: $(SOLINK)

# The compiler and flags the objects were built with: when they change
# (another CC, DEVELOPER=1, -fPIC added), every object is rebuilt rather
# than mixed with objects of other flags (git's GIT-CFLAGS).
FLAGS_STAMP := $(BUILD)/gen/cflags
$(FLAGS_STAMP): FORCE
	@mkdir -p $(@D)
	@echo '$(CC) $(CPPFLAGS) $(CFLAGS)' > $@.new
	@if cmp -s $@.new $@; then rm -f $@.new; else mv -f $@.new $@; fi

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# The runtime and the zygote compiled by the python3 that runs them
# (scripts/pycode.py): a worker started cold unmarshals its code instead of
# compiling it. Without a python3 here the file is empty and workers
# compile, as any other interpreter's do.
PYCODE := $(BUILD)/gen/pycode.bin
$(PYCODE): scripts/pycode.py repl/runtime.py repl/zygote.py
	@mkdir -p $(@D)
	@$(PYTHON) scripts/pycode.py $@ repl/runtime.py repl/zygote.py || \
	 { echo "note: $(PYTHON) cannot compile the REPL runtime: workers compile it as they start"; \
	   : > $@; }

$(GEN_SRC): scripts/embed.sh $(EMBED) $(PYCODE)
	@mkdir -p $(@D)
	sh scripts/embed.sh $@ $(EMBED) $(PYCODE)

$(BUILD)/obj/gen/embedded.o: $(GEN_SRC) $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Icommon $(CFLAGS) -c -o $@ $<

# The commit being built (`rlm --version`, `rlm bench perf --json`): looked
# up on every make, the file rewritten only when it changes; "unknown"
# outside a git checkout, so a tarball builds as well.
$(VER_SRC): FORCE
	@mkdir -p $(@D)
	@sh scripts/version.sh $@

$(BUILD)/obj/gen/version.o: $(VER_SRC) $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

.PHONY: FORCE
FORCE:

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(BUILD)/obj/cli/main.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The library holds the modules up to api/: the commands (cli/) and the
# programs they run (serve/, bench/) stay in the binary.
SO_OBJ := $(filter-out $(BUILD)/obj/cli/% $(BUILD)/obj/serve/% $(BUILD)/obj/bench/%,$(LIB_OBJ))
$(SOLIB): $(SO_OBJ)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,$(SONAME) $(SO_DEFS) -o $@ $(SO_OBJ) $(LDLIBS)

$(SOLINK): $(SOLIB)
	ln -sf $(SONAME) $@

$(BUILD)/tests/test_%: $(BUILD)/obj/tests/test_%.o $(TLIB_OBJ) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/fuzz_%: $(BUILD)/obj/tests/fuzz_%.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

# ---- tests ----
# `make test` builds everything and runs every test binary; the last line
# it prints is "total: N passed, N failed, N skipped".
test: $(BIN) $(SOLINK) $(TEST_BINS)
	@sh tests/run.sh $(BUILD)

check: test

asan:
	$(MAKE) BUILD=build-asan SAN=asan test

tsan:
	$(MAKE) BUILD=build-tsan SAN=tsan test

valgrind: $(BIN) $(TEST_BINS)
	@VALGRIND=1 sh tests/run.sh $(BUILD)

fuzz-bins: $(FUZZ_BINS)

# Build the libFuzzer targets with clang and run each for FUZZ_SECONDS.
FUZZ_SECONDS ?= 20
fuzz:
	$(MAKE) BUILD=build-fuzz SAN=fuzz CC=clang fuzz-bins
	@sh tests/fuzz.sh build-fuzz $(FUZZ_SECONDS)

# ---- quality ----
# The layout of docs/architecture.md: includes go down the arrows only, and
# every symbol librlm.a exports carries its module's prefix.
check-layout: $(LIB) $(SOLIB)
	$(PYTHON) scripts/check_layout.py includes
	$(PYTHON) scripts/check_layout.py symbols $(LIB_OBJ)
	$(PYTHON) scripts/check_layout.py exports $(SOLIB)

lint: check-layout
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability \
	    --suppress=missingIncludeSystem --inline-suppr -D_GNU_SOURCE -I. \
	    $(MODULES)

format:
	clang-format -i $(LIB_SRC) cli/main.c $(wildcard */*.h) $(TEST_SRC) $(TLIB_SRC)

format-check:
	clang-format --dry-run --Werror $(LIB_SRC) cli/main.c $(wildcard */*.h)

# ---- benchmarks and demo ----
bench: $(BIN)
	@$(BIN) bench perf

DEMO_DIR ?= $(BUILD)/demo
demo: $(BIN)
	@sh scripts/demo.sh $(BIN) $(DEMO_DIR)

# ---- setup ----
deps:
	@sh scripts/deps.sh

# The Python package (python/crlm, docs/python.md) with the library inside
# it, where the package looks first.
PYPKG := python/crlm
python: $(SOLIB)
	@test -d $(PYPKG) || { echo "make python: no $(PYPKG) in this tree" >&2; exit 1; }
	cp -f $(SOLIB) $(PYPKG)/$(SONAME)

# make install [PREFIX=/usr/local] [DESTDIR=]: the binary, the library, the
# headers rlm/rlm.h and api/api.h reach (under include/rlm/, keeping their
# layout: rlm.h includes "../llm/llm.h"), rlm.pc, and the Python package
# where Debian's python3 looks: lib/python3.X/dist-packages under
# /usr/local (or another prefix), /usr/lib/python3/dist-packages for
# PREFIX=/usr (PYDIR= to choose).
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCDIR ?= $(PREFIX)/include
PYVER  := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PYDIR  ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python$(PYVER)/dist-packages)
HEADERS := rlm/rlm.h api/api.h corpus/corpus.h llm/llm.h repl/repl.h tool/tool.h \
           common/common.h common/text.h store/store.h sim/sim.h
install: $(BIN) $(SOLIB)
	install -D -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/rlm
	install -D -m 644 $(SOLIB) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/librlm.so
	for h in $(HEADERS); do install -D -m 644 $$h $(DESTDIR)$(INCDIR)/rlm/$$h || exit 1; done
	@mkdir -p $(DESTDIR)$(LIBDIR)/pkgconfig
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|' \
	    -e 's|@INCDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCDIR))|' \
	    -e 's|@VERSION@|$(shell sed -n 's/^#define RLM_VERSION "\(.*\)"/\1/p' common/common.h)|' \
	    -e 's|@REQUIRES@|$(PKGS)|' scripts/rlm.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/rlm.pc
	@if [ -d $(PYPKG) ]; then \
	    echo "install $(PYPKG) -> $(DESTDIR)$(PYDIR)/crlm"; \
	    for f in $$(cd $(dir $(PYPKG)) && find $(notdir $(PYPKG)) -name '*.py' -o -name '*.pyi' -o -name py.typed); do \
	        install -D -m 644 $(dir $(PYPKG))$$f $(DESTDIR)$(PYDIR)/$$f || exit 1; \
	    done; \
	    install -D -m 644 $(SOLIB) $(DESTDIR)$(PYDIR)/crlm/$(SONAME); \
	fi
	@# the loader's cache, for a real install (not a staged one)
	@if [ -z "$(DESTDIR)" ]; then ldconfig 2>/dev/null || true; fi

clean:
	rm -rf build build-asan build-tsan build-fuzz
	rm -f $(PYPKG)/$(SONAME)

help:
	@echo "make [all]      build $(BIN) and $(SOLIB)"
	@echo "make lib        build $(SOLIB) (also part of all): the C API, docs/api.md"
	@echo "make python     copy $(SONAME) into $(PYPKG) (import crlm from python/; docs/python.md)"
	@echo "make install    bin/rlm, lib/$(SONAME), include/rlm/, lib/pkgconfig/rlm.pc, the"
	@echo "                Python package crlm (PREFIX=$(PREFIX), DESTDIR for staging)"
	@echo "make deps       install the Debian packages rlm needs (as root)"
	@echo "make demo       solve a generated 1M-token haystack on the simulator"
	@echo "make test       build and run every test (last line: total: N passed, N failed, N skipped)"
	@echo "make asan|tsan  the tests under ASan+UBSan / TSan (build-asan/, build-tsan/)"
	@echo "make valgrind   the tests under valgrind memcheck"
	@echo "make fuzz       build the libFuzzer targets with clang and run each FUZZ_SECONDS"
	@echo "make bench      the performance suite (rlm bench perf)"
	@echo "make lint       check-layout and cppcheck;  make format-check  clang-format"
	@echo "make check-layout  includes go down the module arrows, exports carry their prefix,"
	@echo "                $(SONAME) exports the public API and nothing else"
	@echo "DEVELOPER=1     warnings are errors (CI sets it)"

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

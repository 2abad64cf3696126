# Habits of the module: `make test` is what CI runs.
GO ?= go
STATICCHECK = $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME ?= 3s
RACE ?= -race
# Every module of the workspace (go.work): the library at the root and
# the nested modules (gatewayapi, fleet, examples), each with requirements of
# its own; `go test ./...` at the root covers the root module only.
MODULES := $(shell $(GO) list -m -f '{{.Dir}}')
# each runs its command in every module's directory, stopping at the
# first that fails.
each = set -e; for d in $(MODULES); do echo "== $$d"; (cd "$$d" && $(1)); done

.PHONY: test deps fmt vet staticcheck unit allocs benchonce fuzz bench run examples suite suitesmoke

test: deps fmt vet staticcheck unit allocs benchonce fuzz

# The ACME tests run against Debian's pebble (an RFC 8555 test server),
# the fleet's against Debian's etcd and redis-server.
deps:
	@command -v pebble >/dev/null || { echo "installing Debian's pebble for the ACME tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pebble; }
	@command -v etcd >/dev/null || { echo "installing Debian's etcd for the fleet's tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server etcd-client; }
	@command -v redis-server >/dev/null || { echo "installing Debian's redis-server for the cluster rate-limit tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; }
	@command -v chromium >/dev/null || { echo "installing Debian's chromium for the console's browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

fmt:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	@$(call each,$(GO) vet ./...)

staticcheck:
	@$(call each,$(STATICCHECK) ./...)

unit:
	@$(call each,$(GO) test $(RACE) -count=1 -timeout 8m ./...)

# The allocation budgets, without the race detector, which changes them.
allocs:
	@$(call each,$(GO) test -count=1 -timeout 4m -run 'Alloc' ./...)

# Every benchmark once, so that none rots.
benchonce:
	@$(call each,$(GO) test -count=1 -timeout 6m -run '^$$' -bench . -benchtime 1x ./...)

# Every Fuzz target of every package of every module, briefly (a
# package of a nested module is named by its directory from the root,
# which the workspace resolves). Go 1.26's fuzzing
# coordinator can report "context deadline exceeded" as -fuzztime ends
# without having found anything (go.dev/issue/75804, fixed in Go 1.27): a
# run that fails that way and wrote no failing input is run once more; any
# other failure fails at once.
fuzz:
	@set -e; for f in $$(grep -l '^func Fuzz' $$(find . -name '*_test.go')); do \
	  dir=$$(dirname $$f); \
	  for t in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | sed 's/^func //'); do \
	    echo "fuzz $$dir $$t"; \
	    log=$$(mktemp); \
	    rc=0; $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $$dir > $$log 2>&1 || rc=$$?; \
	    cat $$log; \
	    if [ $$rc -ne 0 ]; then \
	      if grep -q 'context deadline exceeded' $$log && ! grep -q 'Failing input written' $$log; then \
	        echo "fuzz $$dir $$t: the coordinator's deadline race, once more"; \
	        $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $$dir; \
	      else rm -f $$log; exit 1; fi; \
	    fi; \
	    rm -f $$log; \
	  done; \
	done

bench:
	@$(call each,$(GO) test -run '^$$' -bench . -benchmem ./...)

run:
	$(GO) run ./examples/paduraksad

# The example programs built and each run against loopback, its answer
# checked, alone (unit runs them too, as the package ./examples).
examples:
	$(GO) test -count=1 ./examples

# The end-to-end suite against nginx, HAProxy and Caddy (benchmarks/README.md);
# never part of test. QUICK=1 for a short run.
suite:
	$(GO) run ./benchmarks

# The suite's smoke test and template checks alone (unit runs them too).
suitesmoke:
	$(GO) test -count=1 -run 'TestSmoke|Template' ./benchmarks

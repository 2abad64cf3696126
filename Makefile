# Habits of the module: `make test` is what CI runs.
GO ?= go
STATICCHECK = $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME ?= 3s
RACE ?= -race

.PHONY: test deps fmt vet staticcheck unit allocs benchonce fuzz bench run suite suitesmoke

test: deps fmt vet staticcheck unit allocs benchonce fuzz

# The ACME tests run against Debian's pebble (an RFC 8555 test server).
deps:
	@command -v pebble >/dev/null || { echo "installing Debian's pebble for the ACME tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pebble; }

fmt:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(STATICCHECK) ./...

unit:
	$(GO) test $(RACE) -count=1 -timeout 8m ./...

# The allocation budgets, without the race detector, which changes them.
allocs:
	$(GO) test -count=1 -timeout 4m -run 'Alloc' ./...

# Every benchmark once, so that none rots.
benchonce:
	$(GO) test -count=1 -timeout 6m -run '^$$' -bench . -benchtime 1x ./...

# Every Fuzz target of every package, briefly.
fuzz:
	@set -e; for f in $$(grep -l '^func Fuzz' $$(find . -name '*_test.go')); do \
	  dir=$$(dirname $$f); \
	  for t in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | sed 's/^func //'); do \
	    echo "fuzz $$dir $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $$dir; \
	  done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

run:
	$(GO) run ./examples/paduraksad

# The end-to-end suite against nginx, HAProxy and Caddy (benchmarks/README.md);
# never part of test. QUICK=1 for a short run.
suite:
	$(GO) run ./benchmarks

# The suite's smoke test and template checks alone (unit runs them too).
suitesmoke:
	$(GO) test -count=1 -run 'TestSmoke|Template' ./benchmarks

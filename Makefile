# seatledger build, test and code generation.
GO ?= go
BIN := $(CURDIR)/.bin

.PHONY: all build test test-short proto dev vet fmt clean jepsen jepsen-long

all: build

# The version and commit the binaries report (seatd version, seatctl
# version, Admin Status, seatledger_build_info); internal/buildinfo.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X github.com/seatledger/seatledger/internal/buildinfo.version=$(VERSION) \
	-X github.com/seatledger/seatledger/internal/buildinfo.commit=$(COMMIT)

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

# The container image (deploy/Dockerfile: static seatd and seatctl, non-root,
# /var/lib/seatd a volume); docs/DEPLOY.md. IMAGE=registry/seatd:tag to name it.
IMAGE ?= seatledger/seatd:$(VERSION)
.PHONY: image
image:
	docker build -f deploy/Dockerfile -t $(IMAGE) --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) .

# The whole test suite, as CI runs it (.ci/run calls exactly this).
test:
	$(GO) vet ./...
	$(GO) vet -tags faults ./...
	$(GO) test -count=1 -timeout 20m ./...
	$(GO) test -count=1 -tags faults -run 'Unsafe|Fault|Corrupt' ./fsm/ ./raftnode/ ./cmd/seatd/
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 20x ./...

# Go benchmarks (FSM apply, encode/decode, routing, seat map, proposals),
# for benchstat: make bench > new.txt; benchstat old.txt new.txt
.PHONY: bench seatbench
bench:
	$(GO) test -run '^$$' -bench . -count 6 ./fsm/ ./shard/ ./raftnode/

# The load tool against a local 3-node cluster of seatd processes (or
# --endpoints); docs/PERFORMANCE.md gives the command for every target.
#   make seatbench ARGS='--workload stampede'
seatbench:
	$(GO) run ./cmd/seatbench $(ARGS)

# How cost grows with groups, clients, shows and seats per show: one short
# uniform run per point, tables for docs/PERFORMANCE.md (about 8 minutes).
.PHONY: perf-scaling
perf-scaling:
	cmd/seatbench/scaling.sh

# Regenerate protobuf code and the OpenAPI document (needs Debian's protoc;
# the Go plugins are pinned as tool lines in go.mod). Generated code and
# gateway/openapi.json are committed. protoc-gen-openapiv2 describes the
# HTTP rules and messages; gateway/openapigen adds what only the gateway
# knows (the error reasons and statuses, the hand-written routes).
OPENAPI_TMP := $(BIN)/openapi
proto:
	mkdir -p $(OPENAPI_TMP)
	cd proto/ledgerpb && protoc -I . -I ../third_party -I /usr/include \
	  --plugin=protoc-gen-go="$$($(GO) tool -n protoc-gen-go)" \
	  --plugin=protoc-gen-go-grpc="$$($(GO) tool -n protoc-gen-go-grpc)" \
	  --plugin=protoc-gen-grpc-gateway="$$($(GO) tool -n protoc-gen-grpc-gateway)" \
	  --plugin=protoc-gen-openapiv2="$$($(GO) tool -n protoc-gen-openapiv2)" \
	  --go_out=. --go_opt=paths=source_relative \
	  --go-grpc_out=. --go-grpc_opt=paths=source_relative \
	  --grpc-gateway_out=. --grpc-gateway_opt=paths=source_relative \
	  --grpc-gateway_opt=grpc_api_configuration=booking.yaml \
	  --grpc-gateway_opt=generate_unbound_methods=false \
	  --openapiv2_out=$(OPENAPI_TMP) \
	  --openapiv2_opt=grpc_api_configuration=booking.yaml,generate_unbound_methods=false \
	  --openapiv2_opt=allow_merge=true,merge_file_name=seatledger,json_names_for_fields=false \
	  booking.proto ledger.proto admin.proto catalog.proto webhook.proto waitroom.proto
	$(GO) run ./gateway/openapigen $(OPENAPI_TMP)/seatledger.swagger.json gateway/openapi.json

dev:
	$(GO) run ./cmd/seatd dev

# One fault-injection run against real seatd processes, e.g.
#   make jepsen ARGS='--seed 42 --nodes 5 --duration 2m --nemesis all'
# Exits 1 on any violation; the history and report land in jepsen-out/<seed>.
jepsen:
	$(GO) run -tags faults ./cmd/seatjepsen run $(ARGS)

# The long matrix: every nemesis alone and all together, several seeds, on 5
# nodes; results appended to docs/JEPSEN-RESULTS.md. Tune with SEEDS= and
# DURATION= (see jepsen/long.sh).
jepsen-long:
	jepsen/long.sh

clean:
	rm -rf $(BIN)

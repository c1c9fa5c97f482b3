#!/usr/bin/env bash
# Builds the pinned third-party binaries the local stack and the integration
# tests run, into bin/ at the repository root:
#
#   etcd, etcdctl, etcdutl                   go.etcd.io/etcd at the version etcd/
#                                            pins (test/tools/etcd/VERSION/go.mod)
#   etcd-VERSION                             every other etcd of test/tools/etcd/,
#                                            for the tests against other versions
#   kube-apiserver, kube-controller-manager  k8s.io/kubernetes  (test/tools/go.mod)
#   kube-node (+ symlinks kubelet,           k8s.io/kubernetes  (test/tools/go.mod)
#     kube-scheduler, kube-proxy)
#   kubectl                                  k8s.io/kubernetes  (test/tools/go.mod),
#                                            upstream's cmd/kubectl: the tests'
#                                            kubectl and kustomize, of the version
#                                            the cluster runs
#   coredns                                  github.com/coredns/coredns at the
#                                            version test/tools/coredns/go.mod
#                                            requires, with the plugins skylb's
#                                            Corefiles use (its main.go)
#   source-controller, kustomize-controller  github.com/fluxcd/NAME at the version
#                                            test/tools/flux/NAME/go.mod requires
#   cert-manager-controller                  github.com/cert-manager/cert-manager at
#                                            the version test/tools/cert-manager/
#                                            go.mod requires, through its main.go
#   promtool                                 github.com/prometheus/prometheus at the
#                                            version test/tools/prometheus/go.mod requires
#   helm                                     helm.sh/helm/v4 at the version
#                                            test/tools/helm/go.mod requires
#   external-dns                             sigs.k8s.io/external-dns at the version
#                                            test/tools/external-dns/go.mod requires;
#                                            only when named (scripts/bench.sh's full
#                                            run names it): no test needs it
#   e2e.test, agnhost                        k8s.io/kubernetes  (test/tools/e2e/go.mod):
#                                            upstream's e2e.test with only the network
#                                            specs (a test binary, go test -c), and the
#                                            command of its agnhost image; only when
#                                            named (test/conformance names them)
#
# A binary is rebuilt only when its stamp file bin/.NAME.version differs from
# what would be built now (module version, Go version, and a hash of its
# go.mod, go.sum, main.go and the build flags), so bumping a version rebuilds
# what it affects and a second run is a no-op.
#
# How, on a first build:
# - the standard library packages the builds share are compiled first, once
#   (concurrent go commands would each compile them), while go list
#   downloads every build's modules;
# - the binaries of one module directory are built by one go command (etcd
#   with etcdctl and etcdutl; kube-apiserver, kube-controller-manager and
#   kube-node), which compiles the packages they share once and links them
#   side by side;
# - up to BUILD_JOBS (default 2) go builds run at once, the slowest first
#   (and a slower build that was still downloading starts beside them): the
#   cores stay busy while one links (a single thread) or compiles a large
#   package alone;
# - the go commands' output goes to bin/.NAME.log, shown if one fails. What is
#   printed instead: a line per build started and finished, and every 30
#   seconds (every second, in place, on a terminal) what each build is doing
#   (downloading modules, compiling N of M packages, linking), for how long,
#   and what waits.
#
# Usage: scripts/build-bins.sh [NAME...]   (default: all of them but external-dns)
#        scripts/build-bins.sh std [NAME...]
#                                         only the shared standard library packages,
#                                         and the NAMEs' module downloads
# Env:   BIN_DIR (default <repo>/bin), BUILD_JOBS (default 2), plus the usual
#        Go variables (GOCACHE, GOMODCACHE, GOPROXY, GOFLAGS, ...).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS=$ROOT/test/tools
BIN_DIR=${BIN_DIR:-$ROOT/bin}
BUILD_JOBS=${BUILD_JOBS:-2}
ETCD_DIR=$TOOLS/etcd

# etcd_pinned: the etcd version etcd/kustomization.yaml pins for
# registry.k8s.io/etcd (its tag 3.6.8-0 is etcd 3.6.8).
etcd_pinned() {
	awk '/- name: registry.k8s.io\/etcd$/ { want = 1; next }
		want && /newTag:/ { sub(/-[0-9]+$/, "", $2); print $2; exit }' "$ROOT/etcd/kustomization.yaml"
}
ETCD_VERSION=$(etcd_pinned)
if [ ! -f "$ETCD_DIR/$ETCD_VERSION/go.mod" ]; then
	echo "etcd/kustomization.yaml pins etcd '$ETCD_VERSION', but test/tools/etcd/$ETCD_VERSION/go.mod does not exist" >&2
	exit 2
fi
ETCD_OTHERS=()
for dir in "$ETCD_DIR"/*/; do
	v=$(basename "$dir")
	[ "$v" = "$ETCD_VERSION" ] || ETCD_OTHERS+=("etcd-$v")
done
# The slowest builds first: they are started first.
ALL=(kube-apiserver kube-controller-manager kube-node kubectl helm cert-manager-controller
	promtool coredns source-controller kustomize-controller
	etcd etcdctl etcdutl "${ETCD_OTHERS[@]}")
# Built only when named.
ON_REQUEST=(external-dns e2e.test agnhost)
# The commands kube-node runs, by the name it is called with.
KUBE_NODE_LINKS=(kubelet kube-scheduler kube-proxy)

command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin
export CGO_ENABLED=0 GOWORK=off
# Small binaries, faster links: no symbol table, no DWARF (which is then not
# worth generating at compile time either).
BUILD_FLAGS=(-trimpath "-gcflags=all=-dwarf=false")
LDFLAGS_BASE="-s -w"

mkdir -p "$BIN_DIR"
BIN_DIR=$(cd "$BIN_DIR" && pwd)
GO_VERSION=$(go env GOVERSION)
START=$SECONDS

# On a terminal the progress line is rewritten in place; STATUS_SHOWN says
# whether it is on screen (log clears it first).
TTY=false
[ -t 1 ] && TTY=true
STATUS_SHOWN=false

log() {
	if [ "$STATUS_SHOWN" = true ]; then
		printf '\r\033[K'
		STATUS_SHOWN=false
	fi
	printf '[build-bins] %s\n' "$*"
}

elapsed() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# digest [FILE...]: short content hash of the given files and of stdin.
digest() { cat "$@" - | sha256sum | cut -c1-16; }

# modversion DIR MODULE: the version of MODULE that DIR/go.mod requires
# (read from the file: no module download).
modversion() {
	awk -v m="$2" '$1 == "require" && $2 == m { print $3; exit }
		$1 == m { print $2; exit }' "$1/go.mod"
}

# kube_ldflags VERSION: the version stamping upstream's build applies.
kube_ldflags() {
	local v=$1 major minor pkg out=''
	major=${v#v} major=${major%%.*}
	minor=${v#v"$major".} minor=${minor%%.*}
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		out+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
		out+=" -X $pkg.gitTreeState=clean"
	done
	echo "$out"
}

# plan NAME: sets VERSION, LDFLAGS and STAMP for NAME, and MODDIR and PKG,
# the module directory to build in and the package to build.
plan() {
	local module='' files=() etcd_version='' tool_dir=''
	case $1 in
	etcd | etcdctl | etcdutl) etcd_version=$ETCD_VERSION ;;
	etcd-*) etcd_version=${1#etcd-} ;;
	kube-apiserver | kube-controller-manager | kube-node | kubectl) module=k8s.io/kubernetes ;;
	# Each of these has a module of its own under test/tools that pins the
	# upstream module; PKG is the command, the tool of that go.mod.
	coredns)
		# A main of our own: CoreDNS with the plugins skylb's Corefiles use.
		module=github.com/coredns/coredns tool_dir=$TOOLS/coredns PKG=. ;;
	source-controller | kustomize-controller)
		module=github.com/fluxcd/$1 tool_dir=$TOOLS/flux/$1 PKG=github.com/fluxcd/$1 ;;
	cert-manager-controller)
		# The upstream command's module is not on the module proxy: a main of
		# our own assembles the controllers from the library.
		module=github.com/cert-manager/cert-manager tool_dir=$TOOLS/cert-manager PKG=. ;;
	promtool)
		module=github.com/prometheus/prometheus tool_dir=$TOOLS/prometheus
		PKG=$module/cmd/promtool ;;
	helm) module=helm.sh/helm/v4 tool_dir=$TOOLS/helm PKG=helm.sh/helm/v4/cmd/helm ;;
	external-dns)
		# v0.22.0: v0.23.0, the newest release, needs Go 1.27.
		module=sigs.k8s.io/external-dns tool_dir=$TOOLS/external-dns PKG=$module ;;
	e2e.test | agnhost)
		# e2e.test is the test binary of test/tools/e2e (go test -c);
		# agnhost, upstream's command, from the same module.
		module=k8s.io/kubernetes tool_dir=$TOOLS/e2e PKG=$module/test/images/agnhost
		[ "$1" != e2e.test ] || PKG=. ;;
	*)
		echo "unknown binary '$1' (known: ${ALL[*]} ${ON_REQUEST[*]})" >&2
		exit 2
		;;
	esac
	LDFLAGS=$LDFLAGS_BASE
	if [ -n "$etcd_version" ]; then
		# The etcd modules' own main packages, listed as tools in their go.mod.
		MODDIR=$ETCD_DIR/$etcd_version PKG=go.etcd.io/etcd/server/v3
		[ "$1" != etcdctl ] || PKG=go.etcd.io/etcd/etcdctl/v3
		[ "$1" != etcdutl ] || PKG=go.etcd.io/etcd/etcdutl/v3
		[ -f "$MODDIR/go.mod" ] || {
			echo "unknown binary '$1': no test/tools/etcd/$etcd_version/go.mod" >&2
			exit 2
		}
		VERSION=v$etcd_version
		files=("$MODDIR/go.mod" "$MODDIR/go.sum")
	elif [ -n "$tool_dir" ]; then
		MODDIR=$tool_dir
		VERSION=$(modversion "$MODDIR" "$module")
		files=("$MODDIR/go.mod" "$MODDIR/go.sum")
		[ ! -f "$MODDIR/main.go" ] || files+=("$MODDIR/main.go")
		[ "$1" != e2e.test ] || files+=("$MODDIR/e2e_test.go")
		# Stamped with their version as upstream's release builds do.
		case $1 in
		helm) LDFLAGS+=" -X $module/internal/version.version=$VERSION -X $module/internal/version.gitTreeState=clean" ;;
		external-dns) LDFLAGS+=" -X $module/pkg/apis/externaldns.Version=$VERSION" ;;
		esac
	else
		MODDIR=$TOOLS PKG=./cmd/$1
		VERSION=$(modversion "$TOOLS" "$module")
		files=("$TOOLS/go.mod" "$TOOLS/go.sum")
		# kubectl is upstream's own main (a tool of test/tools/go.mod); the
		# others, mains of test/tools/cmd.
		if [ "$1" = kubectl ]; then
			PKG=$module/cmd/kubectl
		else
			files+=("$TOOLS/cmd/$1/main.go")
		fi
	fi
	[ "$module" != k8s.io/kubernetes ] || LDFLAGS+=$(kube_ldflags "$VERSION")
	STAMP="$VERSION $GO_VERSION $(digest "${files[@]}" <<<"${BUILD_FLAGS[*]} $LDFLAGS")"
}

# current NAME: bin/NAME exists and its stamp equals $STAMP.
current() {
	[ -x "$BIN_DIR/$1" ] && [ -f "$BIN_DIR/.$1.version" ] &&
		[ "$(cat "$BIN_DIR/.$1.version")" = "$STAMP" ]
}

# link NAME: creates the symlinks a multi-call binary is run through.
link() {
	local l
	[ "$1" = kube-node ] || return 0
	for l in "${KUBE_NODE_LINKS[@]}"; do ln -sfn kube-node "$BIN_DIR/$l"; done
}

# exec_name PKG: the file name "go build -o DIR/" gives PKG's command (its
# last path element, or the one before a major version suffix).
exec_name() {
	local p=$1 e=${1##*/}
	if [[ $e =~ ^v[0-9]+$ ]]; then
		p=${p%/*} e=${p##*/}
	fi
	echo "$e"
}

# The standard library packages the builds share (the dependencies of these
# roots cover nearly all of them): compiled by one go command before the
# builds start, as concurrent go commands would each compile them again.
STD_ROOTS=(net/http net/http/httputil net/http/pprof net/mail encoding/json encoding/xml
	encoding/gob encoding/csv os/exec os/signal flag regexp text/template html/template
	compress/gzip compress/zlib crypto/x509 expvar log/slog runtime/pprof runtime/metrics
	go/parser go/doc database/sql testing time/tzdata hash/fnv container/heap)
STD_PID='' STD_T0=0 STD_DONE=false

# Builds, one per go command: the names it builds (space-separated), its
# module directory, packages, -ldflags, version and stamps; its state
# (listing, ready, building, done), the process id of its go list or go
# build, the time that started, and the count of packages it compiles (not
# counting the standard library). U_KEY finds the build of a module
# directory and -ldflags.
U_NAMES=() U_DIR=() U_PKGS=() U_LDFLAGS=() U_VERSION=() U_STAMPS=() U_TEST=()
U_STATE=() U_PID=() U_T0=() U_TOTAL=()
declare -A U_KEY=()

# add NAME: adds NAME, planned and not current, to the build of its module
# directory and -ldflags, or to a new one.
add() {
	local key="$MODDIR|$LDFLAGS" i
	# A test binary is a go command of its own (go test -c).
	[ "$1" != e2e.test ] || key+="|test"
	if [ -n "${U_KEY[$key]+x}" ]; then
		i=${U_KEY[$key]}
		U_NAMES[i]+=" $1" U_PKGS[i]+=" $PKG" U_STAMPS[i]+="|$STAMP"
		return
	fi
	i=${#U_NAMES[@]}
	U_KEY[$key]=$i
	U_NAMES[i]=$1 U_DIR[i]=$MODDIR U_PKGS[i]=$PKG U_LDFLAGS[i]=$LDFLAGS U_TEST[i]=false
	[ "$1" != e2e.test ] || U_TEST[i]=true
	U_VERSION[i]=$VERSION U_STAMPS[i]=$STAMP
	U_STATE[i]=new U_PID[i]='' U_T0[i]=0 U_TOTAL[i]=0
}

# what I: "NAME[, NAME...] VERSION" of build I.
what() {
	local names=${U_NAMES[$1]}
	echo "${names// /, } ${U_VERSION[$1]}"
}

# unit_file I SUFFIX: bin/.NAME.SUFFIX for build I's first NAME: .log (the
# go commands' output), .pkgs (its packages), .out (its binaries).
unit_file() { echo "$BIN_DIR/.${U_NAMES[$1]%% *}.$2"; }

# go_bg DIR LOG ARGS...: runs "go ARGS..." in DIR in the background, in a
# process group of its own (setsid) so that it can be stopped whole, its
# output appended to LOG; sets PID.
go_bg() {
	local dir=$1 logf=$2
	shift 2
	(cd "$dir" && exec setsid go "$@") >>"$logf" 2>&1 &
	PID=$!
}

# start_std: starts compiling STD_ROOTS (non-main packages: checked, cached,
# no output).
start_std() {
	rm -f "$BIN_DIR/.std.log"
	go_bg "$ROOT" "$BIN_DIR/.std.log" build -v "${BUILD_FLAGS[@]}" "${STD_ROOTS[@]}"
	STD_PID=$PID STD_T0=$SECONDS
	log "standard library: compiling it once for all the builds..."
}

# start_list I: lists build I's packages with go list, which downloads the
# modules they need, into bin/.NAME.pkgs (those outside the standard library:
# the count of packages to compile, for the progress lines).
start_list() {
	local i=$1 pkgs test=()
	read -ra pkgs <<<"${U_PKGS[i]}"
	[ "${U_TEST[i]}" = false ] || test=(-test)
	rm -f "$(unit_file "$i" log)" "$(unit_file "$i" pkgs)"
	(cd "${U_DIR[i]}" && exec setsid go list -deps "${test[@]}" -f '{{if not .Standard}}{{.ImportPath}}{{end}}' \
		"${pkgs[@]}") >"$(unit_file "$i" pkgs)" 2>>"$(unit_file "$i" log)" &
	U_PID[i]=$! U_T0[i]=$SECONDS U_STATE[i]=listing
}

# start_build I: starts build I's go build. -v lists the packages as they
# are compiled, for the progress lines.
start_build() {
	local i=$1 out pkgs verb=(build -v)
	# go test -c would vet the package, computing vet's facts of every
	# dependency first: upstream's code, vetted upstream.
	[ "${U_TEST[i]}" = false ] || verb=(test -c -vet=off)
	out=$(unit_file "$i" out)
	rm -rf "$out"
	mkdir -p "$out"
	read -ra pkgs <<<"${U_PKGS[i]}"
	# One package: -o names the file; several: -o names the directory.
	if [ ${#pkgs[@]} -eq 1 ]; then out=$out/${U_NAMES[i]}; else out=$out/; fi
	go_bg "${U_DIR[i]}" "$(unit_file "$i" log)" "${verb[@]}" "${BUILD_FLAGS[@]}" \
		-ldflags="${U_LDFLAGS[i]}" -o "$out" "${pkgs[@]}"
	U_PID[i]=$PID U_T0[i]=$SECONDS U_STATE[i]=building
	log "$(what "$i"): building, ${U_TOTAL[i]} packages (log: $(unit_file "$i" log))..."
}

# finish I: puts build I's binaries in place with their stamps.
finish() {
	local i=$1 out names pkgs stamps k file
	out=$(unit_file "$i" out)
	read -ra names <<<"${U_NAMES[i]}"
	read -ra pkgs <<<"${U_PKGS[i]}"
	IFS='|' read -ra stamps <<<"${U_STAMPS[i]}"
	for k in "${!names[@]}"; do
		file=${names[k]}
		[ "${#names[@]}" -eq 1 ] || file=$(exec_name "${pkgs[k]}")
		mv -f "$out/$file" "$BIN_DIR/${names[k]}"
		echo "${stamps[k]}" >"$BIN_DIR/.${names[k]}.version"
		link "${names[k]}"
	done
	rm -rf "$out" "$(unit_file "$i" log)" "$(unit_file "$i" pkgs)"
	U_STATE[i]=done
	log "$(what "$i"): built in $(elapsed $((SECONDS - U_T0[i]))) (total $(elapsed $((SECONDS - START))))"
}

# failed WHAT LOG: reports a failed go command with the end of its output
# (without the download lines) and exits.
failed() {
	log "$1: FAILED, last lines of $2:"
	grep -v '^go: downloading' "$2" | tail -n 30 >&2
	exit 1
}

# ended PID: reports whether the background process PID has ended; sets RC
# to its exit status then.
ended() {
	[ -n "$1" ] && ! kill -0 "$1" 2>/dev/null || return 1
	RC=0
	wait "$1" || RC=$?
}

# state I: what build I is doing, from its go command's output and child
# processes.
state() {
	local i=$1 logf n
	logf=$(unit_file "$i" log)
	case ${U_STATE[i]} in
	listing)
		n=$(grep -c '^go: downloading' "$logf" || true)
		if [ "$n" -gt 0 ]; then echo "downloading modules, $n so far"; else echo "loading packages"; fi
		;;
	ready) echo "waiting, ${U_TOTAL[i]} packages" ;;
	building)
		if pgrep -P "${U_PID[i]}" -x link >/dev/null 2>&1; then
			echo "linking"
		else
			# Packages outside the standard library: a dot in the first
			# path element.
			n=$(grep -c '^[^/ ]*\.[^/ ]*/' "$logf" || true)
			echo "compiling, $n of ${U_TOTAL[i]} packages"
		fi
		;;
	esac
}

# progress: one line: what each build does and for how long, and what waits.
progress() {
	local i line='' left=''
	if [ -n "$STD_PID" ]; then
		line="standard library $(elapsed $((SECONDS - STD_T0))) (compiling, $(grep -vc '^go: ' "$BIN_DIR/.std.log" || true) packages)"
	fi
	for i in "${!U_NAMES[@]}"; do
		case ${U_STATE[i]} in
		listing | building) line+="${line:+; }${U_NAMES[i]// /+} $(elapsed $((SECONDS - U_T0[i]))) ($(state "$i"))" ;;
		ready) left+="${left:+ }${U_NAMES[i]}" ;;
		esac
	done
	line="$(elapsed $((SECONDS - START))): $line${left:+; waiting to build: $left}"
	if [ "$TTY" = true ]; then
		# Cut to the terminal's width, so that \r rewrites the whole line.
		printf '\r\033[K[build-bins] %s' "${line:0:$((${COLUMNS:-$(tput cols 2>/dev/null || echo 100)} - 14))}"
		STATUS_SHOWN=true
	else
		log "$line"
	fi
}

# stop_all: stops the running go commands and their compilers.
stop_all() {
	local pid
	for pid in "$STD_PID" "${U_PID[@]}"; do
		[ -n "$pid" ] || continue
		kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	STD_PID='' U_PID=()
}

cleanup() {
	local rc=$?
	stop_all
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The names asked for, in the order of ALL (slowest first). "std" first:
# compile the standard library's shared packages and download the names'
# modules, build nothing (scripts/playground.sh, so that skylb's build then
# starts beside these builds).
std_only=false
if [ "${1:-}" = std ]; then
	std_only=true
	shift
fi
want=()
for name in "$@"; do
	case " ${ALL[*]} ${ON_REQUEST[*]} " in
	*" $name "*) ;;
	*) plan "$name" ;; # fails with the list of known names
	esac
done
for name in "${ALL[@]}" "${ON_REQUEST[@]}"; do
	if [ $# -eq 0 ]; then
		[ "$std_only" = false ] || continue
		case " ${ON_REQUEST[*]} " in *" $name "*) continue ;; esac
	else
		case " $* " in *" $name "*) ;; *) continue ;; esac
	fi
	want+=("$name")
done

for name in "${want[@]}"; do
	plan "$name"
	if current "$name"; then
		link "$name"
		log "$name $VERSION: up to date"
	else
		add "$name"
	fi
done

# The standard library and every build's module downloads start at once (the
# downloads wait on the network, the compiler keeps the cores busy); a build
# starts once the standard library is compiled and its modules are in, the
# slowest first. Every second:
# what ended; a progress line every second on a terminal, else every 30
# seconds.
if [ ${#U_NAMES[@]} -gt 0 ] || [ "$std_only" = true ]; then
	n=0
	for i in "${!U_NAMES[@]}"; do
		read -ra names <<<"${U_NAMES[i]}"
		n=$((n + ${#names[@]}))
	done
	[ "$std_only" = true ] || log "$n to build, by ${#U_NAMES[@]} go commands, $BUILD_JOBS at a time"
	start_std
	for i in "${!U_NAMES[@]}"; do start_list "$i"; done
fi
last=$SECONDS
pending='listing|ready|building'
[ "$std_only" = false ] || pending=listing
while [ -n "$STD_PID" ] || [[ " ${U_STATE[*]} " =~ \ ($pending)\  ]]; do
	sleep 1
	if ended "$STD_PID"; then
		[ "$RC" -eq 0 ] || failed "standard library" "$BIN_DIR/.std.log"
		rm -f "$BIN_DIR/.std.log"
		log "standard library: compiled in $(elapsed $((SECONDS - STD_T0)))"
		STD_PID='' STD_DONE=true
	fi
	running=0
	for i in "${!U_NAMES[@]}"; do
		case ${U_STATE[i]} in
		listing)
			ended "${U_PID[i]}" || continue
			[ "$RC" -eq 0 ] || failed "$(what "$i"): go list" "$(unit_file "$i" log)"
			U_TOTAL[i]=$(grep -c . "$(unit_file "$i" pkgs)" || true)
			U_PID[i]='' U_STATE[i]=ready
			;;
		building)
			if ended "${U_PID[i]}"; then
				U_PID[i]=''
				[ "$RC" -eq 0 ] || failed "$(what "$i")" "$(unit_file "$i" log)"
				finish "$i"
			else
				running=$((running + 1))
			fi
			;;
		esac
	done
	# A build starts while fewer than BUILD_JOBS slower ones (earlier in
	# ALL) run: one whose modules took longer to download than those of
	# faster builds does not wait for them.
	ahead=0
	for i in "${!U_NAMES[@]}"; do
		[ "$STD_DONE" = true ] && [ "$std_only" = false ] && [ "$ahead" -lt "$BUILD_JOBS" ] || break
		if [ "${U_STATE[i]}" = ready ]; then
			start_build "$i"
			running=$((running + 1))
		fi
		[ "${U_STATE[i]}" != building ] || ahead=$((ahead + 1))
	done
	if [ -n "$STD_PID" ] || [ "$running" -gt 0 ]; then
		if [ "$TTY" = true ] || [ $((SECONDS - last)) -ge 30 ]; then
			progress
			last=$SECONDS
		fi
	fi
done
if [ "$std_only" = true ]; then
	log "standard library compiled, modules downloaded in $(elapsed $((SECONDS - START)))"
else
	log "all done in $(elapsed $((SECONDS - START))), binaries in $BIN_DIR"
fi

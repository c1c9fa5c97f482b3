package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version and commit are stamped at build time, by the Dockerfile and
// scripts/version.sh (-X github.com/skylb/skylb/internal/cli.version=...):
//
//	go build -ldflags "$(scripts/version.sh)" -o skylb .
var version, commit string

// versionInfo is what "skylb version" prints.
type versionInfo struct {
	Version string // from git describe, or the module's version, or "dev"
	Commit  string // the commit built, or "unknown"
	Go      string // the Go release that built skylb
}

// currentVersion returns the stamped version and commit. Without a stamp, the
// version is the module's (go install ...@v1.2.3) or "dev", and the commit
// the revision go build recorded from the checkout, "-dirty" when it had
// changes, or "unknown".
func currentVersion() versionInfo {
	v := versionInfo{Version: version, Commit: commit, Go: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if v.Version == "" && ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v.Version = info.Main.Version
	}
	if v.Commit == "" && ok {
		v.Commit = buildSetting(info, "vcs.revision")
		if v.Commit != "" && buildSetting(info, "vcs.modified") == "true" {
			v.Commit += "-dirty"
		}
	}
	if v.Version == "" {
		v.Version = "dev"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	return v
}

func buildSetting(info *debug.BuildInfo, key string) string {
	for _, s := range info.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// printVersion prints the version, on the first line as "skylb <version>",
// then the commit and the Go version ("skylb version", "skylb --version").
func printVersion(w io.Writer) {
	v := currentVersion()
	fmt.Fprintf(w, "skylb %s\ncommit: %s\ngo: %s %s/%s\n", v.Version, v.Commit, v.Go, runtime.GOOS, runtime.GOARCH)
}

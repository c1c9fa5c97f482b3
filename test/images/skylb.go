package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// goBuildCommand is the go build command of the Dockerfile's build stage.
type goBuildCommand struct {
	Env   []string // the variables set before "go build"
	Flags []string // the arguments of "go build" before -o
}

// dockerfileBuild reads the Dockerfile's RUN instruction that runs
// "go build" and returns its variables and flags, with the build arguments
// VERSION, COMMIT, TARGETOS (linux) and TARGETARCH (arch, a GOARCH) replaced.
func dockerfileBuild(dockerfile, version, commit, arch string) (goBuildCommand, error) {
	var run string
	for _, instr := range instructions(dockerfile) {
		if strings.HasPrefix(instr, "RUN ") && strings.Contains(instr, " go build ") {
			run = strings.TrimPrefix(instr, "RUN ")
			break
		}
	}
	if run == "" {
		return goBuildCommand{}, fmt.Errorf("Dockerfile: no RUN instruction runs go build")
	}
	words, err := shellWords(strings.NewReplacer(
		"${VERSION}", version, "$VERSION", version, "${COMMIT}", commit, "$COMMIT", commit,
		"$TARGETOS", "linux", "${TARGETOS}", "linux",
		"$TARGETARCH", arch, "${TARGETARCH}", arch,
	).Replace(run))
	if err != nil {
		return goBuildCommand{}, fmt.Errorf("Dockerfile: %w", err)
	}
	var c goBuildCommand
	i := 0
	for ; i < len(words) && strings.Contains(words[i], "="); i++ {
		c.Env = append(c.Env, words[i])
	}
	if i+1 >= len(words) || words[i] != "go" || words[i+1] != "build" {
		return goBuildCommand{}, fmt.Errorf("Dockerfile: RUN %q: want VAR=value... go build FLAGS -o OUT .", run)
	}
	for i += 2; i < len(words) && words[i] != "-o"; i++ {
		c.Flags = append(c.Flags, words[i])
	}
	if i+2 >= len(words) || words[i+2] != "." {
		return goBuildCommand{}, fmt.Errorf("Dockerfile: RUN %q: want go build FLAGS -o OUT .", run)
	}
	return c, nil
}

// instructions returns the Dockerfile's instructions, continuation lines
// joined and comments dropped.
func instructions(dockerfile string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(dockerfile, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "#") || (t == "" && cur.Len() == 0) {
			continue
		}
		if strings.HasSuffix(t, "\\") {
			cur.WriteString(strings.TrimSuffix(t, "\\") + " ")
			continue
		}
		cur.WriteString(t)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// shellWords splits s into words as a shell would for simple commands: on
// blanks, with double- and single-quoted parts kept whole.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// skylb is skylb's image, as the Dockerfile builds it: the binary built with
// the Dockerfile's own go build command, on distroless static:nonroot.
func (b *builder) skylb(ctx context.Context) (*spec, error) {
	// No commit: as in a docker build without --build-arg COMMIT.
	return b.skylbFor(ctx, b.refs.Skylb, Tag(b.refs.Skylb), "", runtime.GOARCH, nil)
}

// skylbFor is skylb's image for linux/arch (a GOARCH), tagged ref, as the
// Dockerfile builds it with the build arguments VERSION and COMMIT, with the
// given labels. As the Dockerfile does, it runs "skylb --version" when arch
// is the host's, and fails unless skylb reports version.
func (b *builder) skylbFor(ctx context.Context, ref, version, commit, arch string, labels map[string]string) (*spec, error) {
	dockerfile, err := os.ReadFile(filepath.Join(b.Root, "Dockerfile"))
	if err != nil {
		return nil, err
	}
	c, err := dockerfileBuild(string(dockerfile), version, commit, arch)
	if err != nil {
		return nil, err
	}
	out := "skylb"
	if arch != runtime.GOARCH {
		out = "skylb-linux-" + arch
	}
	bin, err := b.goBuild(ctx, ".", out, c.Env, c.Flags...)
	if err != nil {
		return nil, err
	}
	if arch == runtime.GOARCH && runtime.GOOS == "linux" {
		if err := checkVersion(ctx, bin, "skylb "+version+"\n", "--version"); err != nil {
			return nil, err
		}
	}
	return &spec{
		Name: "skylb", Refs: []string{ref}, Arch: arch,
		Entries: append(distrolessFiles(), file("/skylb", bin, 0o755)),
		Config: v1.Config{
			Entrypoint:   []string{"/skylb"},
			User:         "65532:65532",
			WorkingDir:   "/home/nonroot",
			Env:          []string{defaultPath, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
			ExposedPorts: map[string]struct{}{"8080/tcp": {}},
			Labels:       labels,
		},
	}, nil
}

// Command skylb-image builds skylb's container image without a container
// engine, as the Dockerfile builds it (images.BuildSkylb), for one or more
// linux platforms, and writes it as an OCI image layout tarball or a
// docker-archive tarball, or pushes it to a registry with the credentials of
// the Docker configuration (~/.docker/config.json and its credential
// helpers). It prints the reference with the image index's digest. The
// script scripts/image.sh runs it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/pflag"

	"github.com/skylb/skylb/test/images"
)

// config is the command line.
type config struct {
	Root, Repo, Tag string
	Version, Commit string // the Dockerfile's build arguments
	Platforms       []string
	Out, Format     string
	Push            bool
}

func main() {
	var c config
	pflag.StringVar(&c.Root, "root", ".", "repository root")
	pflag.StringVar(&c.Repo, "repo", "", "image repository (default: the one manifests/kustomization.yaml names)")
	pflag.StringVar(&c.Tag, "tag", "", "image tag (default: --version)")
	pflag.StringVar(&c.Version, "version", "dev", "the Dockerfile's build argument VERSION")
	pflag.StringVar(&c.Commit, "commit", "", "the Dockerfile's build argument COMMIT")
	pflag.StringSliceVar(&c.Platforms, "platform", []string{"linux/amd64", "linux/arm64"}, "platforms to build, linux/ARCH")
	pflag.StringVar(&c.Out, "out", "", "write the image to this file")
	pflag.StringVar(&c.Format, "format", "oci", "format of --out: oci (an OCI image layout tarball of every platform) or docker (a docker-archive tarball of one platform)")
	pflag.BoolVar(&c.Push, "push", false, "push the image index to the repository")
	pflag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "skylb-image:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	if c.Out == "" && !c.Push {
		return fmt.Errorf("nothing to do: give --out FILE, --push or both")
	}
	if c.Format != "oci" && c.Format != "docker" {
		return fmt.Errorf("--format %q: want oci or docker", c.Format)
	}
	arches, err := parsePlatforms(c.Platforms)
	if err != nil {
		return err
	}
	if c.Out != "" && c.Format == "docker" && len(arches) != 1 {
		return fmt.Errorf("--format docker holds one platform: give --platform with one")
	}
	if c.Repo == "" {
		if c.Repo, err = images.SkylbRepo(c.Root); err != nil {
			return err
		}
	}
	if c.Tag == "" {
		c.Tag = c.Version
	}
	ref, err := name.NewTag(c.Repo+":"+c.Tag, name.StrictValidation)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	idx, err := images.BuildSkylb(ctx, images.SkylbOptions{
		Root: c.Root, Ref: ref.Name(), Version: c.Version, Commit: c.Commit, Arches: arches, Log: os.Stderr,
	})
	if err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	switch {
	case c.Out == "":
	case c.Format == "docker":
		if err := images.WriteDockerArchive(c.Out, idx, arches[0], ref); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %s (docker-archive, %s)\n", c.Out, images.Platform(arches[0]))
	default:
		if err := images.WriteLayout(c.Out, idx, ref); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %s (OCI image layout, %s)\n", c.Out, strings.Join(c.Platforms, ", "))
	}
	if c.Push {
		if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
		fmt.Fprintf(os.Stderr, "pushed %s\n", ref)
	}
	fmt.Printf("%s@%s\n", ref.Name(), digest)
	return nil
}

// parsePlatforms returns the architectures of platforms "linux/ARCH" (and
// "linux/arm64/v8"), refusing others: the Dockerfile builds for linux and
// sets no GOARM or other variant.
func parsePlatforms(platforms []string) ([]string, error) {
	if len(platforms) == 0 {
		return nil, fmt.Errorf("--platform: none given")
	}
	var arches []string
	for _, p := range platforms {
		parts := strings.Split(p, "/")
		if len(parts) < 2 || len(parts) > 3 || parts[0] != "linux" || parts[1] == "" ||
			(len(parts) == 3 && p != "linux/arm64/v8") {
			return nil, fmt.Errorf("--platform %q: want linux/ARCH (linux/amd64, linux/arm64, ...)", p)
		}
		arches = append(arches, parts[1])
	}
	return arches, nil
}

package deploy

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skylb/skylb/test/stack"
)

// step is one numbered step of "Deploy to a cluster" in deployPage, with the
// commands of its sh blocks, in order.
type step struct {
	Title    string
	Commands []string
}

// deployPage is the page, relative to the repository's root, whose section
// deploySection the test follows, and lastStep the title prefix of the first
// step it does not (Flux has its own test).
const (
	deployPage    = "manifests/README.md"
	deploySection = "## Deploy to a cluster"
	lastStep      = "### 7."
)

// readmeSteps returns the steps of "Deploy to a cluster" up to, not
// including, lastStep: the commands of their ```sh blocks, with continued
// lines joined. The test runs exactly these, so the page cannot drift from
// what is proven.
func readmeSteps(root string) ([]step, error) {
	f, err := os.Open(filepath.Join(root, deployPage))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		steps              []step
		inSection, inSh    bool
		inFence, continued bool
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case inFence:
			if strings.HasPrefix(line, "```") {
				inFence, inSh = false, false
				continue
			}
			if !inSh || len(steps) == 0 {
				continue
			}
			cur := &steps[len(steps)-1]
			if continued {
				cur.Commands[len(cur.Commands)-1] += " " + strings.TrimSpace(line)
			} else if strings.TrimSpace(line) != "" {
				cur.Commands = append(cur.Commands, strings.TrimSpace(line))
			}
			last := &cur.Commands[len(cur.Commands)-1]
			continued = strings.HasSuffix(*last, "\\")
			*last = strings.TrimSpace(strings.TrimSuffix(*last, "\\"))
		case strings.HasPrefix(line, "```"):
			inFence, inSh, continued = true, strings.TrimPrefix(line, "```") == "sh", false
		case strings.HasPrefix(line, "## "):
			if inSection {
				return steps, nil
			}
			inSection = line == deploySection
		case inSection && strings.HasPrefix(line, lastStep):
			return steps, nil
		case inSection && strings.HasPrefix(line, "### "):
			steps = append(steps, step{Title: strings.TrimPrefix(line, "### ")})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !inSection {
		return nil, fmt.Errorf("%s has no section %q", deployPage, deploySection)
	}
	return steps, nil
}

// TestReadmeSteps pins what the cluster test takes from deployPage: the
// steps that deploy, each with commands, and the commands users rely on.
func TestReadmeSteps(t *testing.T) {
	root := stack.Root(t)
	steps, err := readmeSteps(root)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, s := range steps {
		all = append(all, s.Commands...)
	}
	for _, want := range []string{
		"scripts/gen-certs.sh --secrets ./skylb-secrets ./skylb-certs",
		"kubectl apply -k etcd",
		"kubectl apply -k coredns",
		"kubectl apply -k manifests",
		"kubectl expose deployment web --type=LoadBalancer --port=80",
		"etcdctl --endpoints=https://localhost:2379 --cacert=skylb-certs/ca.crt --cert=skylb-certs/coredns.crt --key=skylb-certs/coredns.key get --prefix /skydns/",
	} {
		found := false
		for _, c := range all {
			found = found || strings.HasPrefix(c, want)
		}
		if !found {
			t.Errorf("deployment steps of %s lack %q; they have:\n%s", deployPage, want, strings.Join(all, "\n"))
		}
	}
}

package stack

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// remoteBase is how the pages refer to the repository's kustomizations, as a
// user's overlay does.
var remoteBase = regexp.MustCompile(`https://github\.com/skylb/skylb//([a-z/-]+)\?ref=vX\.Y\.Z`)

// ReadmeOverlay writes the overlay dir a page (relative to root) shows, its
// yaml blocks whose first line is "# <dir>/<file>", into a temporary
// directory, with the page's references to the repository
// (https://github.com/skylb/skylb//<path>?ref=vX.Y.Z) made local, and returns
// the directory: tests render the page's overlay as written.
func ReadmeOverlay(t testing.TB, root, page, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	files := 0
	for _, block := range strings.Split(string(b), "```yaml\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		first, body, _ := strings.Cut(block, "\n")
		file, ok := strings.CutPrefix(first, "# "+dir+"/")
		if !ok {
			continue
		}
		body = remoteBase.ReplaceAllStringFunc(body, func(url string) string {
			rel, err := filepath.Rel(out, filepath.Join(root, remoteBase.FindStringSubmatch(url)[1]))
			if err != nil {
				t.Fatal(err)
			}
			return rel
		})
		if err := os.WriteFile(filepath.Join(out, file), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		files++
	}
	if files == 0 {
		t.Fatalf("%s has no yaml block of %s/", page, dir)
	}
	return out
}

package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
)

// ModuleDir returns the directory of module at the version the go.mod in
// dir requires, downloading the module if the module cache lacks it.
func ModuleDir(ctx context.Context, dir, module string) (string, error) {
	cmd := exec.CommandContext(ctx, GoTool(), "mod", "download", "-json", module)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", module, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no directory in %q", module, out)
	}
	return m.Dir, nil
}

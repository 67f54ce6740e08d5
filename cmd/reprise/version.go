package main

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionJSON is what version --json prints: the build of this binary.
type versionJSON struct {
	Version  string `json:"version"`            // the module version; "(devel)" when the build recorded none
	Revision string `json:"revision,omitempty"` // the VCS revision built, when the build recorded it
	Time     string `json:"time,omitempty"`     // the revision's commit time
	Modified bool   `json:"modified"`           // the checkout had changes not committed
	Go       string `json:"go"`                 // the Go release that built it
}

// buildVersion reads the version of this binary from its build info.
func buildVersion() versionJSON {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return versionJSON{Version: "(devel)", Go: runtime.Version()}
	}
	return versionOf(info)
}

// versionOf is the version that build info info describes.
func versionOf(info *debug.BuildInfo) versionJSON {
	v := versionJSON{Version: cmp.Or(info.Main.Version, "(devel)"), Go: cmp.Or(info.GoVersion, runtime.Version())}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String returns the version on one line, such as
// "reprise v1.2.0 (go1.26.0)" or
// "reprise (devel) revision 2b68489c1f2e of 2026-11-30T19:20:04Z, modified (go1.26.0)".
func (v versionJSON) String() string {
	s := "reprise " + v.Version
	if v.Revision != "" {
		s += " revision " + v.Revision[:min(len(v.Revision), 12)]
		if v.Time != "" {
			s += " of " + v.Time
		}
		if v.Modified {
			s += ", modified"
		}
	}
	return s + " (" + v.Go + ")"
}

// newVersionCmd returns the version command, which reprise --version runs
// too.
func newVersionCmd(a *app, runF func(context.Context, *versionOptions) error) *cobra.Command {
	var o versionOptions
	return &cobra.Command{
		Use:   "version",
		Short: "Print reprise's version and build",
		Long: `version prints the version of this reprise binary: the module version it
was built as (the tag or a pseudo-version go build stamps in a git
checkout, "(devel)" when the build recorded no VCS information: go run,
-buildvcs=false), the VCS revision and its time when the build recorded
them, whether the checkout had uncommitted changes, and the Go release
that built it.
reprise --version prints the same.`,
		Example: `  reprise version
  reprise --version
  reprise version --json | jq -r .revision`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runVersion(cmd.Context(), &o)
		},
	}
}

// versionOptions are the options of version: none of its own.
type versionOptions struct{ cmdIO }

// runVersion prints the build's version.
func runVersion(_ context.Context, o *versionOptions) error {
	v := buildVersion()
	if o.json {
		return printJSON(o.stdout, v)
	}
	_, err := fmt.Fprintln(o.stdout, v)
	return err
}

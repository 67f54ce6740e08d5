package files

import "strings"

// RemoveSession removes session id's transcript, env files and spilled
// hook output from f, and returns how many there were. Spilled output is
// named <id>-hook-<uuid>.txt; a name with a second "-hook-" belongs to a
// session whose id starts with id's. Env files are <id>.env-<restore id>
// (restore ids hold no "."), and <id>.env in stores written before each
// run had its own; a name with a "." after ".env-" is another session's
// (its id continues with ".env-").
func RemoveSession(f Files, id string) (int, error) {
	names, err := f.List(id)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		rest := strings.TrimPrefix(name, id)
		spilled := strings.HasPrefix(rest, "-hook-") && strings.HasSuffix(rest, ".txt") && !strings.Contains(rest[len("-hook-"):], "-hook-")
		run, isEnv := strings.CutPrefix(rest, ".env-")
		env := rest == ".env" || isEnv && run != "" && !strings.Contains(run, ".")
		if rest != ".jsonl" && !env && !spilled {
			continue
		}
		if err := f.Remove(name); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

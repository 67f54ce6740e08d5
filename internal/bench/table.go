package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes results as a table, aligned for a terminal or, when
// markdown is set, as a Markdown table, followed by the notes of the rows
// that have any. Every ratio is reprise's value over the floor's or the
// peer's, whatever the unit: for rates, above 1 is reprise ahead; for
// times and sizes, below 1.
func WriteTable(w io.Writer, results []Result, markdown bool) error {
	header := []string{"#", "figure", "floor or peer", "its value", "reprise", "ratio reprise/floor or peer", "target", "result"}
	rows := [][]string{header}
	var notes []string
	for _, r := range results {
		rows = append(rows, []string{
			fmt.Sprint(r.Target), r.Figure, r.Row.Floor,
			FormatValue(r.Floor, r.Unit), FormatValue(r.Reprise, r.Unit),
			fmt.Sprintf("%.2f", r.Ratio), bound(r), verdict(r),
		})
		if r.Note != "" {
			notes = append(notes, fmt.Sprintf("%s: %s", r.Name, r.Note))
		}
	}
	if markdown {
		for i, cells := range rows {
			if _, err := fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | ")); err != nil {
				return err
			}
			if i == 0 {
				fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(cells)))
			}
		}
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, cells := range rows {
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			if markdown {
				n = "- " + n
			}
			if _, err := fmt.Fprintln(w, n); err != nil {
				return err
			}
		}
	}
	return nil
}

func bound(r Result) string {
	switch {
	case r.AtLeast != 0:
		return ">= " + FormatValue(r.AtLeast, r.Unit)
	case r.Limit == 0:
		return "-"
	case r.Min:
		return fmt.Sprintf(">= %g", r.Limit)
	}
	return fmt.Sprintf("<= %g", r.Limit)
}

func verdict(r Result) string {
	switch {
	case r.Limit == 0 && r.AtLeast == 0:
		return "-"
	case r.Informational && r.Pass:
		return "met (informational)"
	case r.Informational:
		return "missed (informational)"
	case r.Pass:
		return "pass"
	}
	return "FAIL"
}

// FormatValue writes v, in unit, with three significant digits.
func FormatValue(v float64, unit string) string {
	switch {
	case v >= 1e6 && strings.HasSuffix(unit, "/s"):
		return fmt.Sprintf("%.3gM %s", v/1e6, unit)
	case v >= 1e3 && strings.HasSuffix(unit, "/s"):
		return fmt.Sprintf("%.3gk %s", v/1e3, unit)
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}

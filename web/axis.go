package web

import (
	"fmt"
	"html/template"
	"strconv"
	"time"
)

// axis is a time axis: the stretch of time a row of bars is drawn
// against, from Start to End (unix nanoseconds), with its ticks.
type axis struct {
	Start, End int64
	Ticks      []tick
}

// tick is a labelled mark on an axis, Left percent along it.
type tick struct {
	at    int64 // nanoseconds after the axis's start
	Left  float64
	Label string
	End   bool // at the axis's end: its label ends at the mark
	Bare  bool // so near the end that its label, drawn, would not fit: the page shows the mark alone
}

// Style places the tick on its axis.
func (t tick) Style() template.CSS {
	return template.CSS(fmt.Sprintf("left: %.2f%%", t.Left))
}

// timeBar is a bar on an axis: the time it stands for and where it is
// drawn, in percent of the axis.
type timeBar struct {
	From, To    int64   // unix nanoseconds
	StartMS     float64 // From, in milliseconds after the axis's start
	EndMS       float64 // To, the same
	Left, Width float64 // as drawn: a bar too short to see is widened
	Fits        bool    // its label fits inside it at a phone's width
	Late        bool    // it starts past the middle: its label, shown on hover, opens leftwards
}

// At says how long after its axis's start b starts.
func (b timeBar) At() string {
	if b.StartMS < 0 {
		return duration(int64(-b.StartMS*1e6)) + " before"
	}
	return "+" + duration(int64(b.StartMS*1e6))
}

// Style places the bar on its axis.
func (b timeBar) Style() template.CSS {
	return template.CSS(fmt.Sprintf("left: %.2f%%; width: %.2f%%", b.Left, b.Width))
}

// minSpan is the shortest span an axis shows, so that a run of one
// event still has an axis to stand on.
const minSpan = int64(time.Millisecond)

// minWidth is the narrowest a bar is drawn, in percent: a bar of no
// duration still shows.
const minWidth = 0.5

// The widths that decide whether a label fits inside its bar: the
// narrowest a track is drawn (a phone's width, less the page's margins)
// and the average width of a character of a bar's label, in pixels.
const (
	narrowTrack = 280.0
	labelChar   = 6.5
)

// newAxis is the axis from start to end, at least minSpan long, with a
// tick at each round step of time.
func newAxis(start, end int64) axis {
	a := axis{Start: start, End: max(end, start)}
	span := a.span()
	step := tickStep(span)
	for at := int64(0); at <= span; at += step {
		left := float64(at) / float64(span) * 100
		a.Ticks = append(a.Ticks, tick{at: at, Left: left, Label: tickLabel(at, span), End: at == span, Bare: at < span && left > 85})
	}
	return a
}

// span is the time a's width stands for, in nanoseconds.
func (a axis) span() int64 { return max(a.End-a.Start, minSpan) }

// SpanMS is the time a's width stands for, in milliseconds.
func (a axis) SpanMS() float64 { return float64(a.span()) / 1e6 }

// place is the bar from from to to on a; the part outside a is cut off.
// label is what the bar shows when it fits.
func (a axis) place(from, to int64, label string) timeBar {
	to = max(to, from)
	b := timeBar{From: from, To: to, StartMS: msAfter(a.Start, from), EndMS: msAfter(a.Start, to)}
	span := float64(a.span())
	left := min(max(float64(from-a.Start)/span*100, 0), 100)
	right := min(max(float64(to-a.Start)/span*100, 0), 100)
	b.Width = max(right-left, minWidth)
	b.Left = min(left, 100-b.Width)
	b.Fits = float64(len([]rune(label)))*labelChar+6 <= b.Width/100*narrowTrack
	b.Late = b.Left > 50
	return b
}

// msAfter is how long after start t is, in milliseconds to the
// nanosecond.
func msAfter(start, t int64) float64 { return float64(t-start) / 1e6 }

// tickSteps are the round steps between ticks, in nanoseconds, shortest
// first.
var tickSteps = func() []int64 {
	var out []int64
	for unit := int64(time.Microsecond); unit < int64(10*time.Second); unit *= 10 {
		out = append(out, unit, 2*unit, 5*unit)
	}
	for _, d := range []time.Duration{10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour} {
		out = append(out, int64(d))
	}
	return out
}()

// maxTicks is the most ticks an axis has past its start: few enough that
// their labels fit side by side at a phone's width.
const maxTicks = 5

// tickStep is the shortest round step that cuts span into at most
// maxTicks steps.
func tickStep(span int64) int64 {
	for _, s := range tickSteps {
		if span/s <= maxTicks {
			return s
		}
	}
	day := int64(24 * time.Hour)
	return (span/maxTicks/day + 1) * day
}

// tickLabel writes at, a time on an axis of span nanoseconds, in the
// unit the span is counted in: µs, ms, s, min or h.
func tickLabel(at, span int64) string {
	if at == 0 {
		return "0"
	}
	unit, name := time.Hour, "h"
	switch {
	case span < int64(time.Millisecond):
		unit, name = time.Microsecond, "µs"
	case span < int64(time.Second):
		unit, name = time.Millisecond, "ms"
	case span < int64(2*time.Minute):
		unit, name = time.Second, "s"
	case span < int64(2*time.Hour):
		unit, name = time.Minute, "min"
	}
	return strconv.FormatFloat(float64(at)/float64(unit), 'f', -1, 64) + " " + name
}

// tile draws bars, which follow one another in time, side by side: a bar
// widened to be seen pushes the next ones along, and when that takes the
// last past the axis's end, all are drawn narrower to fit.
func tile(bars []*timeBar) {
	right := 0.0
	for _, b := range bars {
		end := b.Left + b.Width
		b.Left = max(b.Left, right)
		b.Width = max(end-b.Left, minWidth)
		right = b.Left + b.Width
	}
	if right > 100 {
		for _, b := range bars {
			b.Left, b.Width = b.Left*100/right, b.Width*100/right
		}
	}
	for _, b := range bars {
		b.Late = b.Left > 50
	}
}

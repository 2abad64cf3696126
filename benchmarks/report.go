package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// report is the run's markdown document.
type report struct {
	opt      options
	started  time.Time
	versions [][2]string
	notes    []string
	sections []section
}

type section struct {
	title string
	intro string
	head  []string
	rows  [][]string
	after []string
}

func newReport(opt options) *report { return &report{opt: opt, started: time.Now()} }

func (r *report) note(s string) { r.notes = append(r.notes, s) }

func (r *report) add(sec section) { r.sections = append(r.sections, sec) }

func (r *report) markdown() string {
	var b strings.Builder
	mode := "full"
	if r.opt.quick {
		mode = "QUICK=1"
	}
	fmt.Fprintf(&b, "# Benchmark run %s\n\n", r.started.UTC().Format("2006-01-02 15:04 UTC"))
	cmd := strings.Join(append([]string{"go run ./benchmarks"}, r.opt.args...), " ")
	if r.opt.quick && !slices.Contains(r.opt.args, "-quick") {
		cmd = "QUICK=1 " + cmd
	}
	fmt.Fprintf(&b, "Command: `%s` (%s mode; %d round(s); warm-up %s, measured %s per throughput sample; took %s).\n\n",
		cmd, mode, r.opt.rounds, r.opt.warm, r.opt.measure, time.Since(r.started).Round(time.Second))
	b.WriteString("Each proxy runs one worker pinned to CPU " + proxyCPU + "; load generators and upstreams share CPU " + loadCPU +
		". CPU µs/req is user+system time of the proxy's whole process tree over the measured window divided by the requests completed; " +
		"\"med (min)\" are the median and the minimum over rounds (contention only adds CPU time, so the minimum is the cleaner figure). " +
		"Ratios are of medians and of minima. \"other busy\" is the busy time on the proxy's core not charged to the proxy: the noise.\n\n")
	if len(r.versions) > 0 {
		b.WriteString("| component | version |\n|---|---|\n")
		for _, v := range r.versions {
			fmt.Fprintf(&b, "| %s | %s |\n", v[0], escape(v[1]))
		}
		b.WriteString("\n")
	}
	for _, n := range r.notes {
		b.WriteString("- " + n + "\n")
	}
	if len(r.notes) > 0 {
		b.WriteString("\n")
	}
	for _, sec := range r.sections {
		fmt.Fprintf(&b, "## %s\n\n", sec.title)
		if sec.intro != "" {
			b.WriteString(sec.intro + "\n\n")
		}
		if len(sec.head) > 0 {
			b.WriteString("| " + strings.Join(sec.head, " | ") + " |\n")
			b.WriteString("|" + strings.Repeat("---|", len(sec.head)) + "\n")
			for _, row := range sec.rows {
				cells := make([]string, len(row))
				for i, c := range row {
					cells[i] = escape(c)
				}
				b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
			}
			b.WriteString("\n")
		}
		for _, a := range sec.after {
			b.WriteString("- " + a + "\n")
		}
		if len(sec.after) > 0 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func (r *report) write(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(r.markdown()), 0o644)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return slices.Min(xs)
}

// num formats a figure with about three significant digits.
func num(x float64) string {
	switch {
	case x == 0:
		return "0"
	case x >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	default:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
}

func ms(d time.Duration) string { return num(float64(d) / float64(time.Millisecond)) }

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "–"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64) + "x"
}

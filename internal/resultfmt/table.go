package resultfmt

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/mattn/go-runewidth"
)

// table keeps the text of the first MaxRows rows and prints them at Close
// as aligned columns, then the row count:
//
//	id | name
//	---+-----
//	1  | ann
//	(1 row)
type table struct {
	w     io.Writer
	o     Options
	cols  []string
	rows  [][]string
	total int64
}

func newTable(w io.Writer, sc *arrow.Schema, o Options) *table {
	t := &table{w: w, o: o}
	for _, f := range sc.Fields() {
		t.cols = append(t.cols, displayText(f.Name))
	}
	return t
}

func (t *table) Write(rec arrow.RecordBatch) error {
	var cell []byte
	n := int(rec.NumRows())
	for r := 0; r < n && len(t.rows) < t.o.MaxRows; r++ {
		row := make([]string, rec.NumCols())
		for c, col := range rec.Columns() {
			if col.IsNull(r) {
				row[c] = "NULL"
				continue
			}
			cell = appendText(cell[:0], col, r, binaryHex)
			row[c] = displayText(string(cell))
		}
		t.rows = append(t.rows, row)
	}
	t.total += int64(n)
	return nil
}

func (t *table) Close() error {
	bw := bufio.NewWriter(t.w)
	widths, shown := fit(naturalWidths(t.cols, t.rows), t.o.Width)
	hidden := len(t.cols) - shown
	line := func(vals []string, ellipsis string) {
		var b strings.Builder
		for i := 0; i < shown; i++ {
			if i > 0 {
				b.WriteString(" | ")
			}
			v := vals[i]
			if runewidth.StringWidth(v) > widths[i] {
				v = runewidth.Truncate(v, widths[i], "…")
			}
			b.WriteString(v)
			b.WriteString(strings.Repeat(" ", widths[i]-runewidth.StringWidth(v)))
		}
		if hidden > 0 {
			if shown > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(ellipsis)
		}
		fmt.Fprintln(bw, strings.TrimRight(b.String(), " "))
	}
	line(t.cols, "…")
	sep := make([]string, 0, shown+1)
	for i := 0; i < shown; i++ {
		sep = append(sep, strings.Repeat("-", widths[i]))
	}
	if hidden > 0 {
		sep = append(sep, "-")
	}
	fmt.Fprintln(bw, strings.Join(sep, "-+-"))
	for _, r := range t.rows {
		line(r, "…")
	}
	count := fmt.Sprintf("%d row%s", t.total, plural(t.total))
	if t.total > int64(len(t.rows)) {
		count += fmt.Sprintf(", first %d shown", len(t.rows))
	}
	if hidden > 0 {
		count += fmt.Sprintf(", %d of %d columns hidden: %s", hidden, len(t.cols), strings.Join(t.cols[shown:], ", "))
		if t.o.Width > 0 && runewidth.StringWidth(count)+2 > t.o.Width {
			count = runewidth.Truncate(count, max(t.o.Width-2, 1), "…")
		}
	}
	fmt.Fprintf(bw, "(%s)\n", count)
	return bw.Flush()
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func naturalWidths(cols []string, rows [][]string) []int {
	w := make([]int, len(cols))
	for i, c := range cols {
		w[i] = runewidth.StringWidth(c)
	}
	for _, r := range rows {
		for i, v := range r {
			w[i] = max(w[i], runewidth.StringWidth(v))
		}
	}
	return w
}

// minColumnWidth is how narrow fit makes a column before it hides columns
// instead (a narrower one still shows its whole value).
const minColumnWidth = 12

// fit chooses the width of each column so that a table of columns of
// natural widths w, with " | " between them, fits into width terminal
// columns: first every column wider than a cap is cut to it (the widest
// cap that fits, no less than minColumnWidth), then, if that is not
// enough, columns are hidden from the right, leaving room for a last
// column "…" that says so. It returns the widths and how many columns
// are shown; width <= 0 fits nothing.
func fit(w []int, width int) (widths []int, shown int) {
	const sep = 3
	total := func(ws []int, extra int) int {
		n := extra
		for i, x := range ws {
			if i > 0 {
				n += sep
			}
			n += x
		}
		return n
	}
	if width <= 0 || total(w, 0) <= width {
		return w, len(w)
	}
	capped := func(ws []int, c int) []int {
		out := make([]int, len(ws))
		for i, x := range ws {
			out[i] = min(x, c)
		}
		return out
	}
	// The widest cap that fits, found by bisection over [minColumnWidth, max(w)].
	bestCap := func(ws []int, extra int) (int, bool) {
		lo, hi := minColumnWidth, 0
		for _, x := range ws {
			hi = max(hi, x)
		}
		if total(capped(ws, lo), extra) > width {
			return 0, false
		}
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if total(capped(ws, mid), extra) <= width {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		return lo, true
	}
	if c, ok := bestCap(w, 0); ok {
		return capped(w, c), len(w)
	}
	if len(w) == 1 {
		return []int{max(width, 1)}, 1
	}
	// Hide columns from the right; the "…" column takes " | …".
	const more = sep + 1
	shown = len(w) - 1
	for shown > 1 && total(capped(w[:shown], minColumnWidth), more) > width {
		shown--
	}
	if c, ok := bestCap(w[:shown], more); ok {
		return capped(w[:shown], c), shown
	}
	// Not even one column of minColumnWidth fits: give it what there is.
	return []int{max(width-more, 1)}, 1
}

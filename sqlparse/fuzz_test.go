package sqlparse

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse checks that no input makes Classify or any Parse function panic, that every error is a
// well-formed *Error, that whatever a Parse function accepts, Classify classifies the same way, and
// that Analyze finds what Classify, Hint and Params find, and that Split and Last cut the text into
// the statements Statements counts.
func FuzzParse(f *testing.F) {
	for _, tc := range classifyTests {
		f.Add(tc.sql)
	}
	for _, tc := range createTableTests {
		f.Add(tc.sql)
	}
	for _, tc := range createDatabaseTests {
		f.Add(tc.sql)
	}
	for _, tc := range dropDatabaseTests {
		f.Add(tc.sql)
	}
	for _, tc := range dropTableTests {
		f.Add(tc.sql)
	}
	for _, tc := range alterTableTests {
		f.Add(tc.sql)
	}
	for _, tc := range useTests {
		f.Add(tc.sql)
	}
	for _, tc := range insertTests {
		f.Add(tc.sql)
	}
	for _, tc := range errorTests {
		f.Add(tc.sql)
	}
	for _, tc := range travelSpellTests {
		f.Add(tc.sql)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		analyzeAgrees(t, sql)
		checkSplit(t, sql)
		if _, err := RewriteTravels(sql); err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.Offset < -1 || pe.Offset > len(sql) {
				t.Fatalf("RewriteTravels(%q): error %v is not an *Error within the text", sql, err)
			}
		}
		kind := Classify(sql)
		if kind < KindQuery || kind > KindOther {
			t.Fatalf("Classify(%q) = %d, out of range", sql, kind)
		}
		check := func(fn string, want Kind, err error) {
			if err != nil {
				var pe *Error
				if !errors.As(err, &pe) {
					t.Fatalf("%s(%q): error %v is not an *Error", fn, sql, err)
				}
				if pe.Offset < -1 || pe.Offset > len(sql) {
					t.Fatalf("%s(%q): offset %d out of range", fn, sql, pe.Offset)
				}
				if !strings.HasPrefix(err.Error(), "sqlparse: ") {
					t.Fatalf("%s(%q): error %q lacks prefix", fn, sql, err)
				}
				return
			}
			if kind != want {
				t.Fatalf("%s(%q) succeeded but Classify says %v", fn, sql, kind)
			}
		}

		ct, err := ParseCreateTable(sql)
		check("ParseCreateTable", KindCreateTable, err)
		if err == nil {
			if ct.Options == nil || len(ct.Columns) == 0 || ct.Name.Table == "" {
				t.Fatalf("ParseCreateTable(%q) = %+v: incomplete", sql, ct)
			}
			cols := map[string]ColumnDef{}
			for _, c := range ct.Columns {
				if c.Name == "" || c.Type == "" {
					t.Fatalf("ParseCreateTable(%q): empty column name or type in %+v", sql, c)
				}
				cols[c.Name] = c
			}
			for _, k := range ct.PrimaryKey {
				if c, ok := cols[k]; !ok || !c.PrimaryKey {
					t.Fatalf("ParseCreateTable(%q): primary key column %q not marked", sql, k)
				}
			}
			for _, k := range ct.PartitionBy {
				if _, ok := cols[k]; !ok {
					t.Fatalf("ParseCreateTable(%q): unknown partition column %q", sql, k)
				}
			}
		}
		cd, err := ParseCreateDatabase(sql)
		check("ParseCreateDatabase", KindCreateDatabase, err)
		if err == nil && cd.Name == "" {
			t.Fatalf("ParseCreateDatabase(%q): empty name", sql)
		}
		_, err = ParseDropDatabase(sql)
		check("ParseDropDatabase", KindDropDatabase, err)
		dt, err := ParseDropTable(sql)
		check("ParseDropTable", KindDropTable, err)
		if err == nil && dt.Name.Table == "" {
			t.Fatalf("ParseDropTable(%q): empty name", sql)
		}
		at, err := ParseAlterTable(sql)
		check("ParseAlterTable", KindAlterTable, err)
		if err == nil {
			ops := 0
			for _, set := range []bool{len(at.Set) > 0, len(at.Reset) > 0, at.Add != nil, at.RenameFrom != "", at.Drop != "", at.Alter != nil, at.RenameTable != nil, len(at.Adds) > 0, len(at.Drops) > 0, len(at.Modify) > 0} {
				if set {
					ops++
				}
			}
			if ops != 1 || at.RenameFrom != "" && at.RenameTo == "" || at.Add != nil && (at.Add.Column.Name == "" || at.Add.Column.Type == "") ||
				at.RenameTable != nil && at.RenameTable.Table == "" || at.Alter != nil && len(at.Alter.Path) == 0 || !wholeColumns(at) {
				t.Fatalf("ParseAlterTable(%q) = %+v: want exactly one whole operation", sql, at)
			}
		}
		_, err = ParseUse(sql)
		check("ParseUse", KindUse, err)
		for _, at := range []int{0, len(sql) / 2} {
			if s, ok := AtClause(sql, at); ok && !(at <= s.NameStart && s.NameStart < s.NameEnd && s.NameEnd <= s.AtStart && s.AtStart < s.AtEnd && s.AtEnd <= len(sql)) {
				t.Fatalf("AtClause(%q, %d) = %+v", sql, at, s)
			}
		}
		set, err := ParseSet(sql)
		check("ParseSet", KindSet, err)
		if err == nil && (set.Name == "" || set.Reset && set.Value != "") {
			t.Fatalf("ParseSet(%q) = %+v", sql, set)
		}
		ins, err := ParseInsert(sql)
		check("ParseInsert", KindInsert, err)
		if err == nil && (ins.Query == "" || !strings.Contains(sql, ins.Query)) {
			t.Fatalf("ParseInsert(%q): bad query %q", sql, ins.Query)
		}
		// ValuesList never panics, and its rows are pieces of the text.
		if rows, ok := ValuesList(sql); ok {
			for _, r := range rows {
				if !strings.Contains(sql, r.Text) || r.Values < 0 || !strings.HasPrefix(r.Text, "(") {
					t.Fatalf("ValuesList(%q): bad row %+v", sql, r)
				}
			}
		}
	})
}

// wholeColumns reports whether every column an ALTER TABLE's lists name
// has a name, and a type where it needs one.
func wholeColumns(at *AlterTable) bool {
	for _, a := range at.Adds {
		if a.Column.Name == "" || a.Column.Type == "" {
			return false
		}
	}
	for _, c := range at.Modify {
		if c.Name == "" || c.Type == "" {
			return false
		}
	}
	for _, d := range at.Drops {
		if d == "" {
			return false
		}
	}
	return true
}

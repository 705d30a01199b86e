package paimontype

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Column is a column as the user declares it.
type Column struct {
	Name    string
	Type    DataType
	Comment string
}

// Schema is a table definition as the user declares it (no field ids yet).
type Schema struct {
	Columns       []Column
	PrimaryKeys   []string
	PartitionKeys []string
	Options       map[string]string
	Comment       string
}

// DataField is a field of a TableSchema (or of a nested ROW) with its Paimon id.
type DataField struct {
	ID          int
	Name        string
	Type        DataType
	Description string
}

func (f DataField) jsonValue() any {
	o := JSONObject{{"id", f.ID}, {"name", f.Name}, {"type", f.Type.jsonValue()}}
	if f.Description != "" {
		o.Add("description", f.Description)
	}
	return o
}

// MarshalJSON writes the field as Java does.
func (f DataField) MarshalJSON() ([]byte, error) { return json.Marshal(f.jsonValue()) }

// UnmarshalJSON reads a field.
func (f *DataField) UnmarshalJSON(b []byte) error {
	v, err := decodeJSONTree(b)
	if errors.Is(err, ErrTypeTooDeep) {
		return err
	} else if err != nil {
		return fmt.Errorf("paimontype: bad field json %s: %w", clip(string(b)), err)
	}
	df, err := fieldFromJSON(v, 0)
	if err != nil {
		return err
	}
	*f = df
	return nil
}

// TableSchema is the content of schema/schema-N.
type TableSchema struct {
	ID             int64
	Fields         []DataField
	HighestFieldID int
	PartitionKeys  []string
	PrimaryKeys    []string
	Options        map[string]string
	Comment        string
	TimeMillis     int64
}

const schemaVersion = 3

// MarshalJSON renders the schema exactly as Java's SchemaSerializer with Jackson's pretty printer.
func (s *TableSchema) MarshalJSON() ([]byte, error) {
	fs := make([]any, len(s.Fields))
	for i, f := range s.Fields {
		fs[i] = f.jsonValue()
	}
	o := JSONObject{
		{"version", schemaVersion},
		{"id", s.ID},
		{"fields", fs},
		{"highestFieldId", s.HighestFieldID},
		{"partitionKeys", nonNil(s.PartitionKeys)},
		{"primaryKeys", nonNil(s.PrimaryKeys)},
		{"options", SortedJSONObject(s.Options)},
	}
	if s.Comment != "" {
		o.Add("comment", s.Comment)
	}
	o.Add("timeMillis", s.TimeMillis)
	return JacksonPretty(o), nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// UnmarshalJSON reads any schema version, applying Java's defaults for old versions.
func (s *TableSchema) UnmarshalJSON(b []byte) error {
	var o struct {
		Version        *int              `json:"version"`
		ID             int64             `json:"id"`
		Fields         []DataField       `json:"fields"`
		HighestFieldID int               `json:"highestFieldId"`
		PartitionKeys  []string          `json:"partitionKeys"`
		PrimaryKeys    []string          `json:"primaryKeys"`
		Options        map[string]string `json:"options"`
		Comment        *string           `json:"comment"`
		TimeMillis     int64             `json:"timeMillis"`
	}
	if err := checkJSONDepth(b, maxTypeJSONDepth); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	version := 1
	if o.Version != nil {
		version = *o.Version
	}
	if o.Options == nil {
		o.Options = map[string]string{}
	}
	if _, ok := o.Options["bucket"]; !ok && version <= 1 {
		o.Options["bucket"] = "1"
	}
	if _, ok := o.Options["file.format"]; !ok && version <= 2 {
		o.Options["file.format"] = "orc"
	}
	*s = TableSchema{ID: o.ID, Fields: o.Fields, HighestFieldID: o.HighestFieldID,
		PartitionKeys: o.PartitionKeys, PrimaryKeys: o.PrimaryKeys, Options: o.Options, TimeMillis: o.TimeMillis}
	if o.Comment != nil {
		s.Comment = *o.Comment
	}
	return nil
}

// ArrowSchema returns the table columns in order. NOT NULL columns are non-nullable and every field
// carries "PARQUET:field_id" = its Paimon id.
func (s *TableSchema) ArrowSchema() *arrow.Schema {
	fs := make([]arrow.Field, len(s.Fields))
	for i, f := range s.Fields {
		fs[i] = ArrowField(f.Name, f.Type, f.ID)
	}
	return arrow.NewSchema(fs, nil)
}

// ArrowField is the Arrow field of a column of type t with Paimon field id id.
func ArrowField(name string, t DataType, id int) arrow.Field {
	return arrow.Field{Name: name, Type: t.ArrowType(), Nullable: t.Nullable(), Metadata: FieldIDMetadata(id)}
}

// FieldIDMetadata is the Arrow field metadata "PARQUET:field_id" = id.
func FieldIDMetadata(id int) arrow.Metadata {
	return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})
}

// NumBuckets returns the "bucket" option, -1 if unset.
func (s *TableSchema) NumBuckets() int {
	v, ok := s.Options["bucket"]
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return -1
	}
	return n
}

// HasPrimaryKey reports whether the table has a primary key.
func (s *TableSchema) HasPrimaryKey() bool { return len(s.PrimaryKeys) > 0 }

// FieldIndex returns the position of the named field or -1.
func (s *TableSchema) FieldIndex(name string) int {
	for i, f := range s.Fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// TrimmedPrimaryKeys is the primary key minus the partition keys.
func (s *TableSchema) TrimmedPrimaryKeys() []string {
	var out []string
	for _, k := range s.PrimaryKeys {
		if !contains(s.PartitionKeys, k) {
			out = append(out, k)
		}
	}
	return out
}

// TrimmedKeyTypes are the types of TrimmedPrimaryKeys, in their order: the
// types of a data file's _MIN_KEY/_MAX_KEY rows.
func (s *TableSchema) TrimmedKeyTypes() []DataType {
	var out []DataType
	for _, k := range s.TrimmedPrimaryKeys() {
		out = append(out, s.Fields[s.FieldIndex(k)].Type)
	}
	return out
}

// BucketKeys is option bucket-key, else the trimmed primary key.
func (s *TableSchema) BucketKeys() []string {
	if v := strings.TrimSpace(s.Options["bucket-key"]); v != "" {
		var out []string
		for _, k := range strings.Split(v, ",") {
			out = append(out, strings.TrimSpace(k))
		}
		return out
	}
	return s.TrimmedPrimaryKeys()
}

// FieldIndexes returns the positions of the named fields, or an error naming
// one that is not a field.
func (s *TableSchema) FieldIndexes(names []string) ([]int, error) {
	out := make([]int, len(names))
	for i, n := range names {
		out[i] = s.FieldIndex(n)
		if out[i] < 0 {
			return nil, fmt.Errorf("paimontype: column %q not in table", n)
		}
	}
	return out, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// NewTableSchema validates and normalises a user schema into schema-0 (Paimon's Schema normalisation):
// primary-key/partition options become keys, names must be unique, keys must exist, PK columns become NOT NULL.
func NewTableSchema(s Schema, timeMillis int64) (*TableSchema, error) {
	opts := make(map[string]string, len(s.Options))
	for k, v := range s.Options {
		opts[k] = v
	}
	pks := append([]string(nil), s.PrimaryKeys...)
	parts := append([]string(nil), s.PartitionKeys...)
	if v, ok := opts["primary-key"]; ok {
		if len(pks) > 0 {
			return nil, fmt.Errorf("paimontype: primary key given both as option and in the schema")
		}
		pks = splitList(v)
		delete(opts, "primary-key")
	}
	if v, ok := opts["partition"]; ok {
		if len(parts) > 0 {
			return nil, fmt.Errorf("paimontype: partition keys given both as option and in the schema")
		}
		parts = splitList(v)
		delete(opts, "partition")
	}
	if len(s.Columns) == 0 {
		return nil, fmt.Errorf("paimontype: table has no columns")
	}
	seen := map[string]bool{}
	for _, c := range s.Columns {
		if c.Name == "" {
			return nil, fmt.Errorf("paimontype: empty column name")
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("paimontype: duplicate column %q", c.Name)
		}
		if strings.HasPrefix(c.Name, "_KEY_") || c.Name == "_SEQUENCE_NUMBER" || c.Name == "_VALUE_KIND" {
			return nil, fmt.Errorf("paimontype: column name %q is reserved", c.Name)
		}
		seen[c.Name] = true
	}
	for _, list := range [][]string{pks, parts} {
		dup := map[string]bool{}
		for _, k := range list {
			if !seen[k] {
				return nil, fmt.Errorf("paimontype: key column %q is not a table column", k)
			}
			if dup[k] {
				return nil, fmt.Errorf("paimontype: key column %q listed twice", k)
			}
			dup[k] = true
		}
	}
	if len(pks) > 0 && len(parts) > 0 {
		trimmed := 0
		for _, k := range pks {
			if !contains(parts, k) {
				trimmed++
			}
		}
		if trimmed == 0 {
			return nil, fmt.Errorf("paimontype: primary key must not consist only of partition keys")
		}
	}
	pkNullable := strings.EqualFold(opts["primary-key.nullable"], "true")
	ts := &TableSchema{ID: 0, PartitionKeys: parts, PrimaryKeys: pks, Options: opts, Comment: s.Comment, TimeMillis: timeMillis}
	next := 0
	for _, c := range s.Columns {
		t := c.Type
		if t.Root == 0 {
			return nil, fmt.Errorf("paimontype: column %q has no type", c.Name)
		}
		if contains(pks, c.Name) && !pkNullable {
			t.NotNull = true
		}
		id := next
		next++
		t = AssignNestedIDs(t, &next)
		ts.Fields = append(ts.Fields, DataField{ID: id, Name: c.Name, Type: t, Description: c.Comment})
	}
	ts.HighestFieldID = next - 1
	return ts, nil
}

// AssignNestedIDs gives nested ROW fields fresh ids (depth first, as Java's ReassignFieldId).
func AssignNestedIDs(t DataType, next *int) DataType {
	switch t.Root {
	case TypeArray, TypeMultiset:
		e := AssignNestedIDs(*t.Elem, next)
		t.Elem = &e
	case TypeMap:
		k := AssignNestedIDs(*t.Key, next)
		v := AssignNestedIDs(*t.Value, next)
		t.Key, t.Value = &k, &v
	case TypeRow:
		fs := make([]DataField, len(t.Fields))
		for i, f := range t.Fields {
			f.ID = *next
			*next++
			f.Type = AssignNestedIDs(f.Type, next)
			fs[i] = f
		}
		t.Fields = fs
	}
	return t
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// SchemaJSON is a schema's parts as compact JSON, as Java Paimon's $schemas
// system table gives them: the fields, partition keys, primary keys and
// options, each in the schema file's form and order.
type SchemaJSON struct {
	Fields, PartitionKeys, PrimaryKeys, Options string
}

// JSONParts renders s's parts as its schema file holds them, compacted.
func (s *TableSchema) JSONParts() (SchemaJSON, error) {
	b, err := s.MarshalJSON()
	if err != nil {
		return SchemaJSON{}, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return SchemaJSON{}, err
	}
	compact := func(k string) (string, error) {
		var out bytes.Buffer
		if err := json.Compact(&out, raw[k]); err != nil {
			return "", fmt.Errorf("paimontype: schema %d: %s: %w", s.ID, k, err)
		}
		return out.String(), nil
	}
	var j SchemaJSON
	for _, p := range []struct {
		key string
		dst *string
	}{{"fields", &j.Fields}, {"partitionKeys", &j.PartitionKeys}, {"primaryKeys", &j.PrimaryKeys}, {"options", &j.Options}} {
		if *p.dst, err = compact(p.key); err != nil {
			return SchemaJSON{}, err
		}
	}
	return j, nil
}

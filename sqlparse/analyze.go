package sqlparse

// Analysis is what one pass of the lexer finds in a statement: what
// Classify, Hint and Params each find in it, so that a caller that needs
// all three lexes the text once.
type Analysis struct {
	Kind Kind
	// Hint is the offset of the first hint comment, -1 when there is none
	// (Hint).
	Hint int
	// Params, NumParams and ParamsErr are what Params returns.
	Params    []Param
	NumParams int
	ParamsErr error
}

// Analyze lexes sql once and returns what Classify, Hint and Params
// return for it.
func Analyze(sql string) Analysis {
	toks, err := lex(sql)
	a := Analysis{Kind: classify(toks), Hint: -1}
	if err == nil {
		a.Hint = hint(sql, toks)
		a.Params, a.NumParams, a.ParamsErr = params(sql, toks)
	}
	return a
}

package sqlparse

// Call is CALL [database.]procedure(arg, ...): a procedure of flightd's
// (sys.cancel). Args are the literals as written: a number's text, a
// string's value.
type Call struct {
	Name Name
	Args []CallArg
}

// CallArg is one literal argument of a CALL.
type CallArg struct {
	Text   string
	String bool // a quoted string (else a number)
}

// ParseCall parses CALL [database.]procedure([literal {, literal}]) [;],
// where each literal is a number (with an optional sign) or a string.
func ParseCall(sql string) (*Call, error) {
	p, err := newParser("CALL", sql)
	if err != nil {
		return nil, err
	}
	if err := p.expectKeyword("call", "at start of statement"); err != nil {
		return nil, err
	}
	var c Call
	if c.Name, err = p.tableName(); err != nil {
		return nil, err
	}
	if err := p.expectPunct("(", "after the procedure name"); err != nil {
		return nil, err
	}
	for !p.acceptPunct(")") {
		if len(c.Args) > 0 {
			if err := p.expectPunct(",", "between arguments"); err != nil {
				return nil, err
			}
		}
		sign := ""
		if p.acceptPunct("-") {
			sign = "-"
		}
		switch t := p.peek(); {
		case t.kind == tokNumber:
			c.Args = append(c.Args, CallArg{Text: sign + t.text})
		case t.kind == tokString && sign == "":
			c.Args = append(c.Args, CallArg{Text: t.text, String: true})
		default:
			return nil, p.syntaxErr(t, "expected a number or a string as an argument")
		}
		p.next()
	}
	if err := p.end("expected end of statement after the arguments"); err != nil {
		return nil, err
	}
	return &c, nil
}

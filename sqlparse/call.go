package sqlparse

// Call is CALL [database.]procedure(arg, ...): a procedure of flightd's
// (sys.cancel) or Paimon's (sys.create_tag, ...). Args are the literals as
// written: a number's text, a string's value; named ones (name => value,
// as Flink and Spark write them) have their name.
type Call struct {
	Name Name
	Args []CallArg
}

// CallArg is one literal argument of a CALL.
type CallArg struct {
	Name   string // name => value; "" for a positional argument
	Text   string
	String bool // a quoted string (else a number)
}

// ParseCall parses CALL [database.]procedure([arg {, arg}]) [;], where
// each arg is [name =>] literal, a literal being a number (with an
// optional sign) or a string. Named arguments follow positional ones and
// are named once each.
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
		name := ""
		if t := p.peek(); isName(t) && p.peekAt(1).is("=") && p.peekAt(2).is(">") && p.peekAt(1).end == p.peekAt(2).pos {
			name = t.text
			for _, a := range c.Args {
				if a.Name == name {
					return nil, p.semanticErr(t.pos, "argument %q given twice", name)
				}
			}
			p.next()
			p.next()
			p.next()
		} else if len(c.Args) > 0 && c.Args[len(c.Args)-1].Name != "" {
			return nil, p.syntaxErr(t, "expected a named argument (name => value): positional arguments come first")
		}
		sign := ""
		if p.acceptPunct("-") {
			sign = "-"
		}
		switch t := p.peek(); {
		case t.kind == tokNumber:
			c.Args = append(c.Args, CallArg{Name: name, Text: sign + t.text})
		case t.kind == tokString && sign == "":
			c.Args = append(c.Args, CallArg{Name: name, Text: t.text, String: true})
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

"""The `flightd sql` subcommand that the README quickstart uses."""


def test_flightd_sql_prints_a_table(server):
    server.sql("CREATE DATABASE shop")
    server.sql("CREATE TABLE shop.t (id BIGINT, name STRING, PRIMARY KEY (id) NOT ENFORCED)")
    out = server.sql("INSERT INTO shop.t VALUES (1, 'ann'), (2, 'bob')")
    assert "rows_affected" in out and "2" in out
    out = server.sql('SELECT * FROM shop."t$rt" ORDER BY id')
    lines = out.strip().splitlines()
    assert lines[0].split() == ["id", "|", "name"]
    assert lines[2].split() == ["1", "|", "ann"]
    assert lines[3].split() == ["2", "|", "bob"]
    assert lines[-1] == "(2 rows)"

module github.com/idgen/idgen/docs

go 1.26.0

require github.com/idgen/idgen/libs/testenv v0.0.0-00010101000000-000000000000

replace github.com/idgen/idgen/libs/testenv => ../libs/testenv

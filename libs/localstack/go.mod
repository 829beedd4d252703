module github.com/idgen/idgen/libs/localstack

go 1.26.0

replace github.com/idgen/idgen/libs/testenv => ../testenv

require github.com/idgen/idgen/libs/testenv v0.0.0-00010101000000-000000000000

module github.com/idgen/idgen/libs/testenv

go 1.26.0

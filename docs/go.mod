module github.com/idgen/idgen/docs

go 1.26.0

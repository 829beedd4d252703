module github.com/idgen/idgen/model

go 1.26.0

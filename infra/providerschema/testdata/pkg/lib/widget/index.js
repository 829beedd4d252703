"use strict";
const cdktf = require("cdktf");
function widgetRuleTargetToTerraform(struct) {
    return {
        cidr: cdktf.stringToTerraform(struct.cidr),
    };
}
function widgetRuleTargetToHclTerraform(struct) {
    if (!cdktf.canInspect(struct) || cdktf.Tokenization.isResolvable(struct)) {
        return struct;
    }
    const attrs = {
        cidr: {
            value: cdktf.stringToHclTerraform(struct.cidr),
            isBlock: false,
            type: "simple",
            storageClassType: "string",
        },
    };
    // remove undefined attributes
    return Object.fromEntries(Object.entries(attrs).filter(([_, value]) => value !== undefined && value.value !== undefined));
}
function widgetRuleToHclTerraform(struct) {
    if (!cdktf.canInspect(struct) || cdktf.Tokenization.isResolvable(struct)) {
        return struct;
    }
    const attrs = {
        port: {
            value: cdktf.numberToHclTerraform(struct.port),
            isBlock: false,
            type: "simple",
            storageClassType: "number",
        },
        target: {
            value: cdktf.listMapperHcl(widgetRuleTargetToHclTerraform, true)(struct.target),
            isBlock: true,
            type: "list",
            storageClassType: "WidgetRuleTargetList",
        },
    };
    return Object.fromEntries(Object.entries(attrs).filter(([_, value]) => value !== undefined && value.value !== undefined));
}
class WidgetRuleOutputReference extends cdktf.ComplexObject {
    get port() {
        return this.getNumberAttribute('port');
    }
}
/**
* Represents a {@link https://registry.terraform.io/providers/hashicorp/aws/9.9.9/docs/resources/widget aws_widget}
*/
class Widget extends cdktf.TerraformResource {
    /**
    * @param scope The scope in which to define this construct
    * @param options WidgetConfig
    */
    constructor(scope, id, config) {
        super(scope, id, {
            terraformResourceType: 'aws_widget',
        });
        // rule - computed: false, optional: true, required: false
        this._rule = new WidgetRuleList(this, "rule", false);
        this._name = config.name;
        this._size = config.size;
        this._getSecret = config.fetchSecret;
        this._tags = config.tags;
        this._rule.internalValue = config.rule;
    }
    // arn - computed: true, optional: false, required: false
    get arn() {
        return this.getStringAttribute('arn');
    }
    get name() {
        return this.getStringAttribute('name');
    }
    get tags() {
        return this.getStringMapAttribute('tags');
    }
    synthesizeHclAttributes() {
        const attrs = {
            name: {
                value: cdktf.stringToHclTerraform(this._name),
                isBlock: false,
                type: "simple",
                storageClassType: "string",
            },
            size: {
                value: cdktf.numberToHclTerraform(this._size),
                isBlock: false,
                type: "simple",
                storageClassType: "number",
            },
            get_secret: {
                value: cdktf.booleanToHclTerraform(this._getSecret),
                isBlock: false,
                type: "simple",
                storageClassType: "boolean",
            },
            tags: {
                value: cdktf.hashMapperHcl(cdktf.stringToHclTerraform)(this._tags),
                isBlock: false,
                type: "map",
                storageClassType: "stringMap",
            },
            rule: {
                value: cdktf.listMapperHcl(widgetRuleToHclTerraform, true)(this._rule.internalValue),
                isBlock: true,
                type: "list",
                storageClassType: "WidgetRuleList",
            },
        };
        // remove undefined attributes
        return Object.fromEntries(Object.entries(attrs).filter(([_, value]) => value !== undefined && value.value !== undefined));
    }
}
exports.Widget = Widget;
Widget.tfResourceType = "aws_widget";

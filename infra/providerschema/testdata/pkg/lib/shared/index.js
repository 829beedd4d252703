"use strict";
exports.helper = function () {};

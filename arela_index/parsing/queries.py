"""Tree-sitter queries per language: what a definition, a call, an import and a base look like.

Capture names the extractor understands:
`@def.<kind>` + `@name` a definition (kind: class, function, method, interface, struct, trait,
enum, mixin (a Ruby module); a function inside a class becomes a method); `@receiver` the type a
Go method belongs to; `@scope` + `@scope.name` a container that names what it holds without being
a definition (a Rust `impl`, a Swift `extension`); `@call` the name a call uses;
`@import` an import statement, `@import.path` a string naming an imported file;
`@bases` a clause listing base types, `@base` one base type; `@impl.trait` + `@impl.type`
a Rust `impl Trait for Type`.
"""

from __future__ import annotations

_JS_COMMON = """
(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(method_definition name: (_) @name) @def.method
(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)])
  @def.function
(assignment_expression left: (member_expression) @name right: [(arrow_function)
  (function_expression)]) @def.function
(call_expression function: (identifier) @call)
(call_expression function: (member_expression property: (property_identifier) @call))
(new_expression constructor: (identifier) @call)
(new_expression constructor: (member_expression property: (property_identifier) @call))
(import_statement) @import
(call_expression function: (identifier) @_require (#eq? @_require "require")
  arguments: (arguments . (string) @import.path))
(class_heritage) @bases
"""

# A JSX element naming a component (capitalised, unlike DOM tags) renders, i.e. calls, it.
_JSX = """
(jsx_opening_element name: (identifier) @call (#match? @call "^[A-Z]"))
(jsx_self_closing_element name: (identifier) @call (#match? @call "^[A-Z]"))
"""

_JAVASCRIPT = (
    _JS_COMMON
    + """
(class_declaration name: (identifier) @name) @def.class
(field_definition property: (property_identifier) @name value: [(arrow_function)
  (function_expression)]) @def.method
"""
)

_TYPESCRIPT = (
    _JS_COMMON
    + """
(class_declaration name: (type_identifier) @name) @def.class
(abstract_class_declaration name: (type_identifier) @name) @def.class
(interface_declaration name: (type_identifier) @name) @def.interface
(enum_declaration name: (identifier) @name) @def.enum
(public_field_definition name: (property_identifier) @name value: [(arrow_function)
  (function_expression)]) @def.method
(internal_module name: (_) @scope.name) @scope
(extends_type_clause) @bases
"""
)

_GO = """
(function_declaration name: (identifier) @name) @def.function
(method_declaration
  receiver: (parameter_list (parameter_declaration type: [
    (type_identifier) @receiver
    (pointer_type (type_identifier) @receiver)
    (generic_type type: (type_identifier) @receiver)
    (pointer_type (generic_type type: (type_identifier) @receiver))]))
  name: (field_identifier) @name) @def.method
(type_spec name: (type_identifier) @name type: (struct_type)) @def.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @def.interface
(call_expression function: (identifier) @call)
(call_expression function: (selector_expression field: (field_identifier) @call))
(import_spec) @import
(struct_type (field_declaration_list (field_declaration !name type: (_) @base)))
"""

_RUST = """
(function_item name: (identifier) @name) @def.function
(struct_item name: (type_identifier) @name) @def.struct
(union_item name: (type_identifier) @name) @def.struct
(enum_item name: (type_identifier) @name) @def.enum
(trait_item name: (type_identifier) @name) @def.trait
(impl_item type: (_) @scope.name) @scope
(mod_item name: (identifier) @scope.name body: (_)) @scope
(call_expression function: (identifier) @call)
(call_expression function: (field_expression field: (field_identifier) @call))
(call_expression function: (scoped_identifier name: (identifier) @call))
(call_expression function: (generic_function function: (identifier) @call))
(call_expression function: (generic_function function: (field_expression field:
  (field_identifier) @call)))
(call_expression function: (generic_function function: (scoped_identifier name: (identifier)
  @call)))
(use_declaration) @import
(trait_item bounds: (trait_bounds) @bases)
(impl_item trait: (_) @impl.trait type: (_) @impl.type)
"""

_JAVA = """
(class_declaration name: (identifier) @name) @def.class
(record_declaration name: (identifier) @name) @def.class
(interface_declaration name: (identifier) @name) @def.interface
(annotation_type_declaration name: (identifier) @name) @def.interface
(enum_declaration name: (identifier) @name) @def.enum
(method_declaration name: (identifier) @name) @def.method
(constructor_declaration name: (identifier) @name) @def.method
(method_invocation name: (identifier) @call)
(object_creation_expression type: (type_identifier) @call)
(object_creation_expression type: (generic_type (type_identifier) @call))
(import_declaration) @import
(superclass) @bases
(super_interfaces) @bases
(extends_interfaces) @bases
"""

_C_FUNCTIONS = """
(function_definition declarator: (function_declarator declarator: (_) @name)) @def.function
(function_definition declarator: (pointer_declarator
  declarator: (function_declarator declarator: (_) @name))) @def.function
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator
  declarator: (function_declarator declarator: (_) @name)))) @def.function
(struct_specifier name: (type_identifier) @name body: (_)) @def.struct
(union_specifier name: (type_identifier) @name body: (_)) @def.struct
(enum_specifier name: (type_identifier) @name body: (_)) @def.enum
(type_definition type: (struct_specifier !name body: (_)) declarator: (type_identifier) @name)
  @def.struct
(type_definition type: (enum_specifier !name body: (_)) declarator: (type_identifier) @name)
  @def.enum
(call_expression function: (identifier) @call)
(call_expression function: (field_expression field: (field_identifier) @call))
(preproc_include path: (_) @import.path)
"""

_C = _C_FUNCTIONS

_CPP = (
    _C_FUNCTIONS
    + """
(function_definition declarator: (reference_declarator
  (function_declarator declarator: (_) @name))) @def.function
(class_specifier name: (_) @name body: (_)) @def.class
(call_expression function: (qualified_identifier name: (identifier) @call))
(call_expression function: (template_function name: (identifier) @call))
(call_expression function: (qualified_identifier name: (template_function name: (identifier)
  @call)))
(new_expression type: (type_identifier) @call)
(base_class_clause) @bases
"""
)

_CSHARP = """
(class_declaration name: (identifier) @name) @def.class
(record_declaration name: (identifier) @name) @def.class
(interface_declaration name: (identifier) @name) @def.interface
(struct_declaration name: (identifier) @name) @def.struct
(enum_declaration name: (identifier) @name) @def.enum
(method_declaration name: (identifier) @name) @def.method
(constructor_declaration name: (identifier) @name) @def.method
(local_function_statement name: (identifier) @name) @def.function
(invocation_expression function: (identifier) @call)
(invocation_expression function: (generic_name . (identifier) @call))
(invocation_expression function: (member_access_expression name: (identifier) @call))
(invocation_expression function: (member_access_expression name: (generic_name . (identifier)
  @call)))
(invocation_expression function: (conditional_access_expression (member_binding_expression
  name: (identifier) @call)))
(object_creation_expression type: (identifier) @call)
(object_creation_expression type: (generic_name . (identifier) @call))
(using_directive) @import
(base_list) @bases
"""

_RUBY = """
(class name: (_) @name) @def.class
(method name: (_) @name) @def.method
(singleton_method name: (_) @name) @def.method
(module name: (_) @name) @def.mixin
(call method: (identifier) @call)
(call method: (identifier) @_require (#match? @_require "^require(_relative)?$")
  arguments: (argument_list . (string) @import.path))
(call method: (identifier) @_mixin (#match? @_mixin "^(include|extend|prepend)$")
  arguments: (argument_list [(constant) (scope_resolution)] @base))
(superclass) @bases
"""

_PHP = """
(class_declaration name: (name) @name) @def.class
(interface_declaration name: (name) @name) @def.interface
(trait_declaration name: (name) @name) @def.trait
(enum_declaration name: (name) @name) @def.enum
(method_declaration name: (name) @name) @def.method
(function_definition name: (name) @name) @def.function
(function_call_expression function: (name) @call)
(function_call_expression function: (qualified_name (name) @call .))
(member_call_expression name: (name) @call)
(nullsafe_member_call_expression name: (name) @call)
(scoped_call_expression name: (name) @call)
(object_creation_expression (name) @call)
(object_creation_expression (qualified_name (name) @call .))
(namespace_use_declaration) @import
(require_once_expression (string) @import.path)
(require_expression (string) @import.path)
(include_expression (string) @import.path)
(include_once_expression (string) @import.path)
(base_clause) @bases
(class_interface_clause) @bases
(declaration_list (use_declaration) @bases)
"""

_KOTLIN = """
(class_declaration name: (_) @name) @def.class
(object_declaration name: (_) @name) @def.class
(function_declaration name: (_) @name) @def.function
(call_expression . (identifier) @call)
(call_expression . (navigation_expression (identifier) @call .))
(import) @import
(delegation_specifiers) @bases
"""

_SWIFT = """
(class_declaration name: (type_identifier) @name) @def.class
(class_declaration name: (user_type) @scope.name) @scope
(protocol_declaration name: (_) @name) @def.interface
(function_declaration name: (_) @name) @def.function
(protocol_function_declaration name: (_) @name) @def.method
(init_declaration) @def.method
(call_expression . (simple_identifier) @call)
(call_expression . (navigation_expression suffix: (navigation_suffix suffix:
  (simple_identifier) @call)))
(import_declaration) @import
(inheritance_specifier inherits_from: (_) @base)
"""

_SCALA = """
(class_definition name: (_) @name) @def.class
(object_definition name: (_) @name) @def.class
(trait_definition name: (_) @name) @def.trait
(enum_definition name: (_) @name) @def.enum
(function_definition name: (_) @name) @def.function
(function_declaration name: (_) @name) @def.function
(call_expression function: (identifier) @call)
(call_expression function: (field_expression field: (identifier) @call))
(instance_expression . (type_identifier) @call)
(import_declaration) @import
(extends_clause) @bases
"""

_SHELL = """
(function_definition name: (word) @name) @def.function
(command name: (command_name (word) @call))
(command name: (command_name (word) @_source (#match? @_source "^(source|\\\\.)$"))
  argument: (_) @import.path)
"""

# Python through tree-sitter only for files the running interpreter cannot parse (syntax newer
# than it: 3.12 f-strings under 3.11, 3.14 t-strings): `ast` reads everything else.
_PYTHON = """
(class_definition name: (identifier) @name) @def.class
(function_definition name: (identifier) @name) @def.function
(call function: (identifier) @call)
(call function: (attribute attribute: (identifier) @call))
(import_statement) @import
(import_from_statement) @import
(class_definition superclasses: (argument_list [(identifier) (attribute)] @base))
"""

QUERIES: dict[str, str] = {
    "python": _PYTHON,
    "javascript": _JAVASCRIPT + _JSX,
    "typescript": _TYPESCRIPT,
    "tsx": _TYPESCRIPT + _JSX,
    "go": _GO,
    "rust": _RUST,
    "java": _JAVA,
    "c": _C,
    "cpp": _CPP,
    "csharp": _CSHARP,
    "ruby": _RUBY,
    "php": _PHP,
    "kotlin": _KOTLIN,
    "swift": _SWIFT,
    "scala": _SCALA,
    "shell": _SHELL,
}

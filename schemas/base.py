"""Base classes shared by every API model.

:class:`WireModel` fixes how a model meets JSON:

* Python attributes are snake_case; the JSON names are camelCase aliases.
  Reading wire data (``model_validate``, ``from_wire``) matches JSON names
  only, so a snake_case key in the input is an unknown field, not a value.
  Constructors accept the Python names.
* Unknown fields are kept (``extra="allow"``) and written back, so an object
  from a newer hub survives a read-modify-write.
* :meth:`WireModel.to_wire` writes only the fields that were present in the
  input or set in code, so an object read and written back is unchanged.
* Fields that OCM's Go types always serialise (no ``omitempty``) are listed
  in ``go_always``; objects built in code write them even when left at their
  default, the way the Go agent does. Objects read from the wire are not
  touched, so they still round-trip exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.config import ExtraValues

from schemas.errors import SchemaValidationError, problems_from_pydantic
from schemas.markers import CELRule

__all__ = ["WIRE_CONTEXT_KEY", "PrinterColumn", "ResourceInfo", "WireModel", "is_wire_context"]

#: Validation-context key that marks data read from the wire.
WIRE_CONTEXT_KEY = "schemas.wire"


def is_wire_context(context: Any) -> bool:
    """Whether a validation context says the data came from the wire."""
    return isinstance(context, dict) and bool(context.get(WIRE_CONTEXT_KEY))


def _wire_context(context: Any) -> Any:
    if context is None:
        return {WIRE_CONTEXT_KEY: True}
    if isinstance(context, dict):
        return {WIRE_CONTEXT_KEY: True, **context}
    return context


class WireModel(BaseModel):
    """A JSON object of the Kubernetes API (see the module docstring)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=True,
        serialize_by_alias=True,
        extra="allow",
        use_attribute_docstrings=True,
    )

    #: Python names of fields Go writes even when empty (no ``omitempty``).
    go_always: ClassVar[frozenset[str]] = frozenset()
    #: ``x-kubernetes-validations`` of this object's CRD schema.
    crd_validations: ClassVar[tuple[CELRule, ...]] = ()

    def model_post_init(self, context: Any, /) -> None:
        """Mark ``go_always`` fields as set on objects built in code."""
        if not is_wire_context(context):
            self.__pydantic_fields_set__.update(self.go_always)

    @model_validator(mode="wrap")
    @classmethod
    def _unknown_keys_are_not_fields(
        cls, data: Any, handler: ModelWrapValidatorHandler[Self], info: ValidationInfo
    ) -> Self:
        obj = handler(data)
        # An unknown wire key spelled like a Python attribute (``field_manager``)
        # lands in the extras, and pydantic then counts the attribute as set.
        # Unmark it unless its JSON name was really present.
        extra = obj.__pydantic_extra__
        if extra and isinstance(data, dict) and is_wire_context(info.context):
            for name in extra.keys() & cls.model_fields.keys():
                field = cls.model_fields[name]
                wire_name = field.validation_alias or field.alias or name
                if wire_name != name and wire_name not in data:
                    obj.__pydantic_fields_set__.discard(name)
        return obj

    @classmethod
    def model_validate(
        cls,
        obj: Any,
        *,
        strict: bool | None = None,
        extra: ExtraValues | None = None,
        from_attributes: bool | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        """Validate wire data: JSON names only, nothing added to the input."""
        return super().model_validate(
            obj,
            strict=strict,
            extra=extra,
            from_attributes=from_attributes,
            context=_wire_context(context),
            by_alias=True if by_alias is None else by_alias,
            by_name=False if by_name is None else by_name,
        )

    @classmethod
    def model_validate_json(
        cls,
        json_data: str | bytes | bytearray,
        *,
        strict: bool | None = None,
        extra: ExtraValues | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        """Validate a JSON document, with the same rules as :meth:`model_validate`."""
        return super().model_validate_json(
            json_data,
            strict=strict,
            extra=extra,
            context=_wire_context(context),
            by_alias=True if by_alias is None else by_alias,
            by_name=False if by_name is None else by_name,
        )

    @classmethod
    def from_wire(cls, raw: Any) -> Self:
        """Parse wire data, raising :class:`SchemaValidationError` on bad input.

        Checks what the API server checks for this type (types, enums,
        required fields, patterns, limits, list-map keys, CEL rules).
        """
        try:
            return cls.model_validate(raw)
        except ValidationError as err:
            raise SchemaValidationError(cls.__name__, problems_from_pydantic(err)) from None

    def to_wire(self) -> dict[str, Any]:
        """The JSON object: camelCase names, only fields that are set, unknown fields kept."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


@dataclass(frozen=True)
class PrinterColumn:
    """One ``additionalPrinterColumns`` entry."""

    name: str
    json_path: str
    type: Literal["string", "integer", "boolean", "date", "number"] = "string"


@dataclass(frozen=True)
class ResourceInfo:
    """How a kind is served: group, version, names, scope, printer columns."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    scope: Literal["Namespaced", "Cluster"]
    short_names: tuple[str, ...] = ()
    printer_columns: tuple[PrinterColumn, ...] = ()

    @property
    def api_version(self) -> str:
        """``group/version``."""
        return f"{self.group}/{self.version}"

    @property
    def list_kind(self) -> str:
        """The kind of the list type (``ManifestWorkList``)."""
        return f"{self.kind}List"

    @property
    def crd_name(self) -> str:
        """The CRD's object name (``manifestworks.work.open-cluster-management.io``)."""
        return f"{self.plural}.{self.group}"

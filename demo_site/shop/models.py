"""The shop's own data: products, customers' orders and their lines."""

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

ORDER_NO_RE = r"^\d{8}-\d{4}$"


class Product(models.Model):
    """Something the shop sells."""

    sku = models.CharField(max_length=32, unique=True, verbose_name=_("SKU"), help_text=_("Stock keeping unit."))
    name = models.CharField(max_length=200, verbose_name=_("name"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    price = models.DecimalField(max_digits=10, decimal_places=2, verbose_name=_("price"))
    stock = models.PositiveIntegerField(default=0, verbose_name=_("stock"), help_text=_("Units on the shelf."))

    class Meta:
        ordering = ["name"]
        verbose_name = _("product")
        verbose_name_plural = _("products")

    def __str__(self) -> str:
        return f"{self.name} ({self.sku})"


class Order(models.Model):
    """A customer's order; the order number is what customers quote."""

    class State(models.TextChoices):
        PLACED = "placed", _("Placed")
        PACKED = "packed", _("Packed")
        SHIPPED = "shipped", _("Shipped")
        DELIVERED = "delivered", _("Delivered")
        CANCELLED = "cancelled", _("Cancelled")

    # Once an order has left the warehouse it can only be returned, not cancelled.
    CANCELLABLE_STATES = (State.PLACED, State.PACKED)

    order_no = models.CharField(
        max_length=13,
        unique=True,
        validators=[RegexValidator(ORDER_NO_RE, _("Use the form YYYYMMDD-NNNN, e.g. 20250719-0032."))],
        verbose_name=_("order number"),
        help_text=_("Date and sequence number, e.g. 20250719-0032."),
    )
    customer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="orders", verbose_name=_("customer")
    )
    state = models.CharField(max_length=20, choices=State.choices, default=State.PLACED, verbose_name=_("state"))
    eta = models.DateField(
        null=True, blank=True, verbose_name=_("expected delivery"), help_text=_("Empty when cancelled.")
    )
    total = models.DecimalField(max_digits=10, decimal_places=2, default=0, verbose_name=_("total"))
    cancel_reason = models.CharField(max_length=200, blank=True, verbose_name=_("cancellation reason"))
    created = models.DateTimeField(default=timezone.now, verbose_name=_("created"))

    class Meta:
        ordering = ["-created"]
        verbose_name = _("order")
        verbose_name_plural = _("orders")
        indexes = [models.Index(fields=["customer", "-created"], name="shop_order_customer_idx")]

    def __str__(self) -> str:
        return self.order_no


class OrderLine(models.Model):
    """One product in an order, at the price it was sold for."""

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="lines", verbose_name=_("order"))
    product = models.ForeignKey(Product, on_delete=models.PROTECT, related_name="+", verbose_name=_("product"))
    quantity = models.PositiveIntegerField(default=1, verbose_name=_("quantity"))
    price = models.DecimalField(
        max_digits=10, decimal_places=2, verbose_name=_("unit price"), help_text=_("The price when ordered.")
    )

    class Meta:
        ordering = ["id"]
        verbose_name = _("order line")
        verbose_name_plural = _("order lines")
        constraints = [models.UniqueConstraint(fields=["order", "product"], name="shop_orderline_unique_product")]

    def __str__(self) -> str:
        return f"{self.quantity} × {self.product.sku}"

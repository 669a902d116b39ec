"""The shop's tools: what the assistant may look up or do, always on behalf of the signed-in customer."""

from datetime import timedelta
from decimal import Decimal
from typing import Annotated, Any

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from pydantic import Field

from toolcalling import ToolContext, tool

from .models import Order, OrderLine, Product

OrderNo = Annotated[str, Field(description="Order number, e.g. 20250719-0032")]


def _customer(ctx: ToolContext) -> Any:
    """The user the conversation belongs to; ownership comes from the server, never from the model's arguments."""
    user = ctx.user
    if user is None or not user.is_authenticated:
        raise PermissionError("Only a signed-in customer can look up orders.")
    return user


def _own_orders(ctx: ToolContext) -> Any:
    return Order.objects.filter(customer=_customer(ctx))


def _money(value: Decimal) -> str:
    # A string keeps the exact amount; a float would show 19.900000000000002.
    return f"{value:.2f}"


def _line(line: OrderLine) -> dict[str, Any]:
    return {
        "sku": line.product.sku,
        "name": line.product.name,
        "quantity": line.quantity,
        "unit_price": _money(line.price),
    }


def _product(product: Product) -> dict[str, Any]:
    return {
        "sku": product.sku,
        "name": product.name,
        "description": product.description,
        "price": _money(product.price),
        "units_in_stock": product.stock,
    }


@tool(label="Look up an order")
def get_order_status(ctx: ToolContext, order_no: OrderNo) -> dict[str, Any]:
    """Where is my order? Track the status of one order: its shipping state, expected delivery date and items."""
    order_no = order_no.strip()
    try:
        order = _own_orders(ctx).prefetch_related("lines__product").get(order_no=order_no)
    except Order.DoesNotExist:
        # The same answer for unknown and foreign orders, so a customer cannot probe other people's order numbers.
        raise ValueError(f"No order {order_no} for this customer.")
    return {
        "order_no": order.order_no,
        "state": order.state,
        "eta": order.eta.isoformat() if order.eta else None,
        "total": _money(order.total),
        "placed_on": order.created.date().isoformat(),
        "items": [_line(line) for line in order.lines.all()],
    }


@tool(label="List my orders")
def list_my_orders(ctx: ToolContext) -> list[dict[str, Any]]:
    """List my orders: the customer's ten most recent orders with order number, state, delivery date and total."""
    return [
        {
            "order_no": order.order_no,
            "state": order.state,
            "eta": order.eta.isoformat() if order.eta else None,
            "total": _money(order.total),
            "placed_on": order.created.date().isoformat(),
        }
        for order in _own_orders(ctx).order_by("-created")[:10]
    ]


@tool(label="Search the catalogue")
def search_products(
    query: Annotated[str, Field(description="Words to look for in product names and descriptions, e.g. mug")],
    max_results: Annotated[int, Field(ge=1, le=20, description="How many products to return at most.")] = 5,
) -> list[dict[str, Any]]:
    """Find or search products in the shop catalogue by name or description, with price and stock."""
    words = [word for word in query.lower().split() if len(word) > 1]
    if not words:
        raise ValueError("Give at least one word to search for, e.g. mug.")
    matches_any = Q()
    for word in words:
        matches_any |= Q(name__icontains=word) | Q(description__icontains=word)

    # Products matching more of the words come first; a customer's phrasing rarely matches every word.
    def score(product: Product) -> int:
        text = f"{product.name} {product.description}".lower()
        return sum(word in text for word in words)

    found = sorted(Product.objects.filter(matches_any), key=lambda p: (-score(p), p.name))
    return [_product(product) for product in found[:max_results]]


@tool(label="Check the stock")
def get_product_stock(sku: Annotated[str, Field(description="Product SKU, e.g. MUG-001")]) -> dict[str, Any]:
    """Check product stock: how many units of one product (by SKU) are available to order."""
    return _product(_product_by_sku(sku))


def cancellation_preview(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """What the staff member deciding a cancellation sees: the order as it is now, not as it was asked about."""
    try:
        order = _own_orders(ctx).prefetch_related("lines__product").get(order_no=args["order_no"].strip())
    except Order.DoesNotExist:
        raise ValueError(f"No order {args['order_no']} for this customer.")
    return {
        "order": order.order_no,
        "state": order.get_state_display(),
        "can be cancelled": "yes" if order.state in Order.CANCELLABLE_STATES else "no, it can only be returned",
        "placed on": order.created.date().isoformat(),
        "expected delivery": order.eta.isoformat() if order.eta else "-",
        "total": _money(order.total),
        "items": ", ".join(f"{line.quantity} × {line.product.name}" for line in order.lines.all()),
    }


@tool(
    requires_approval=True,
    approval_preview=cancellation_preview,
    label="Cancel an order",  # what customers see; "cancel_order cancelled" read as if the order were cancelled
    description="Cancel one of the user's orders. A staff member confirms it first.",
)
def cancel_order(
    ctx: ToolContext,
    order_no: OrderNo,
    reason: Annotated[str | None, Field(description="Why the customer wants to cancel, in their words.")] = None,
) -> dict[str, Any]:
    """Runs only after staff approval, possibly in a Celery worker with the requester's context rebuilt."""
    order_no = order_no.strip()
    with transaction.atomic():
        try:
            order = _own_orders(ctx).select_for_update().get(order_no=order_no)
        except Order.DoesNotExist:
            raise ValueError(f"No order {order_no} for this customer.")
        if order.state == Order.State.CANCELLED:
            raise ValueError(f"Order {order_no} is already cancelled.")
        if order.state not in Order.CANCELLABLE_STATES:
            raise ValueError(
                f"Order {order_no} is already {order.state} and can no longer be cancelled; it can be returned instead."
            )
        order.state = Order.State.CANCELLED
        order.eta = None
        order.cancel_reason = (reason or "")[:200]
        order.save(update_fields=["state", "eta", "cancel_reason"])
        # The goods never left, so they go back on the shelf.
        for line in order.lines.all():
            Product.objects.filter(pk=line.product_id).update(stock=F("stock") + line.quantity)
    return {"order_no": order.order_no, "state": order.state, "reason": order.cancel_reason or None}


def purchase_preview(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """What the customer confirms before buying: the product, how many, and what it costs now."""
    product = _product_by_sku(args["sku"])
    quantity = int(args.get("quantity") or 1)
    return {
        "product": str(product),
        "quantity": quantity,
        "unit price": _money(product.price),
        "total": _money(product.price * quantity),
        "units in stock": product.stock,
    }


def _product_by_sku(sku: str) -> Product:
    try:
        return Product.objects.get(sku__iexact=sku.strip())
    except Product.DoesNotExist:
        raise ValueError(f"No product with SKU {sku}. Use search_products to find the SKU.")


@tool(
    requires_approval=True,
    approver="user",  # the customer's own purchase: they confirm it on the page, no staff member is asked
    approval_preview=purchase_preview,
    label="Buy a product",
    description="Buy a product for the customer by its SKU. The customer confirms the purchase first.",
)
def buy_product(
    ctx: ToolContext,
    sku: Annotated[str, Field(description="Product SKU, e.g. MUG-001")],
    quantity: Annotated[int, Field(ge=1, le=10, description="How many units to buy.")] = 1,
) -> dict[str, Any]:
    """Runs once the customer confirmed: a new order of the product, at today's price, taken off the shelf."""
    customer = _customer(ctx)
    with transaction.atomic():
        product = _product_by_sku(sku)
        product = Product.objects.select_for_update().get(pk=product.pk)
        if product.stock < quantity:
            raise ValueError(f"Only {product.stock} units of {product.sku} are in stock.")
        today = timezone.localdate()
        prefix = f"{today:%Y%m%d}-"
        number = Order.objects.filter(order_no__startswith=prefix).count() + 1
        order = Order.objects.create(
            order_no=f"{prefix}{number:04d}",
            customer=customer,
            eta=today + timedelta(days=4),
            total=product.price * quantity,
        )
        OrderLine.objects.create(order=order, product=product, quantity=quantity, price=product.price)
        Product.objects.filter(pk=product.pk).update(stock=F("stock") - quantity)
    return {
        "order_no": order.order_no,
        "state": order.state,
        "eta": order.eta.isoformat() if order.eta else None,
        "total": _money(order.total),
        "items": [_line(line) for line in order.lines.select_related("product")],
    }

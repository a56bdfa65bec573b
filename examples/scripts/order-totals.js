// Aggregate an order export: totals per currency and the top customers.
const totals = {};
const byCustomer = {};
for (const o of input.orders) {
  if (o.status !== "paid") continue;
  const amount = o.lines.reduce((s, l) => s + l.quantity * l.unitPrice, 0);
  totals[o.currency] = Math.round(((totals[o.currency] || 0) + amount) * 100) / 100;
  byCustomer[o.customer] = (byCustomer[o.customer] || 0) + amount;
}
({
  totals,
  topCustomers: Object.entries(byCustomer)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([customer, amount]) => ({ customer, amount: Math.round(amount * 100) / 100 })),
})

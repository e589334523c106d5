{{/* The chart's name, or nameOverride. */}}
{{- define "numa-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The objects' name: fullnameOverride, else the release name when it already contains the
chart's name, else <release>-<name>. 63 characters at most (a label value).
*/}}
{{- define "numa-exporter.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels of the pods the DaemonSet (and the monitors) select. */}}
{{- define "numa-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "numa-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of every object: those of manifests/exporter, plus Helm's. */}}
{{- define "numa-exporter.labels" -}}
{{ include "numa-exporter.selectorLabels" . }}
app.kubernetes.io/part-of: numa-testkit
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "numa-exporter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "numa-exporter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "numa-exporter.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion (toString .Values.image.tag)) }}
{{- end }}

{{/* The value of --metrics-bind-address. */}}
{{- define "numa-exporter.bindAddress" -}}
{{- printf "%s:%v" .Values.metrics.bindAddress .Values.metrics.port }}
{{- end }}
